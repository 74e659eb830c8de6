"""Who sees what the assistant executed: the user it acted for, and no one else."""

from __future__ import annotations

from django.db.models import QuerySet

from lindy.permissions import can_use_workspace, team_ids

from .models import OutboxEntry


def can_view_outbox(user) -> bool:
    return can_use_workspace(user)


def visible_outbox(user) -> QuerySet[OutboxEntry]:
    if not can_view_outbox(user):
        return OutboxEntry.objects.none()
    return OutboxEntry.objects.filter(user=user, team_id__in=team_ids(user))
