"""Reads of the core domain, always through the permission rules."""

from __future__ import annotations

from django.core.cache import cache
from django.db.models import Count, QuerySet

from . import permissions
from .models import AgentTask, AuditEntry, Meeting, Membership
from .services import HEARTBEAT_KEY


def task_list(user) -> QuerySet[AgentTask]:
    return (
        permissions.visible_tasks(user)
        .select_related("owner", "team")
        .annotate(event_count=Count("events"))
        .order_by("-updated_at", "-pk")
    )


def recent_tasks(user, count: int) -> list[AgentTask]:
    """The newest tasks the user sees, for a short list of links: no counts, no related rows."""
    return list(permissions.visible_tasks(user).only("pk", "title", "updated_at").order_by("-updated_at", "-pk")[:count])


def recent_meetings(user, count: int) -> list[Meeting]:
    """The newest meetings the user sees, for a short list of links."""
    return list(permissions.visible_meetings(user).only("pk", "title", "occurred_at")
                .order_by("-occurred_at", "-pk")[:count])


def task_detail(user, task_id) -> AgentTask:
    return permissions.get_visible_or_404(permissions.visible_tasks(user).select_related("owner", "team"), pk=task_id)


def meeting_list(user) -> QuerySet[Meeting]:
    return (
        permissions.visible_meetings(user)
        .select_related("owner", "team")
        .prefetch_related("shared_with")
        .order_by("-occurred_at", "-pk")
    )


def meeting_detail(user, meeting_id) -> Meeting:
    return permissions.get_visible_or_404(meeting_list(user), pk=meeting_id)


def memberships_of(user) -> list[Membership]:
    return permissions.memberships(user)


def last_heartbeat() -> str | None:
    return cache.get(HEARTBEAT_KEY)


def audit_entries(user) -> QuerySet[AuditEntry]:
    """The audit log as the user may read it, newest first: all of it for a superuser, their
    teams' entries for a team admin, nothing for anyone else."""
    entries = AuditEntry.objects.select_related("actor", "team").order_by("-created_at", "-pk")
    if permissions.is_superuser(user):
        return entries
    return entries.filter(team_id__in=permissions.workspace_admin_team_ids(user))
