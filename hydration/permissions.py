"""Who may run hydration and see its runs: whoever may edit a memory may run its hydration and
configure its sources (users their own, team admins the team's); whoever may read it sees its runs."""

from __future__ import annotations

from django.db.models import QuerySet

from lindy.permissions import get_visible_or_404
from memory.permissions import can_edit_filesystem, can_use_memory, visible_filesystems

from .models import Run

__all__ = ["can_connect_gmail", "can_run_hydration", "can_use_memory", "get_visible_or_404", "visible_hydration_runs"]


def can_run_hydration(user, filesystem) -> bool:
    return can_edit_filesystem(user, filesystem)


def visible_hydration_runs(user) -> QuerySet[Run]:
    return Run.objects.filter(filesystem__in=visible_filesystems(user))


def can_connect_gmail(user) -> bool:
    return can_use_memory(user)
