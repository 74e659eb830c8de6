"""Who may read and edit memory: a user reads and edits their own memory and reads their teams';
team admins edit their team's. Support staff see none of it, even if they are in a team."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from lindy.permissions import can_use_workspace, get_visible_or_404, is_team_admin, team_ids

from .models import FileSystem

__all__ = ["can_edit_filesystem", "can_use_memory", "get_visible_or_404", "visible_filesystems"]


def can_use_memory(user) -> bool:
    # Support staff are excluded by the core's one rule (lindy.permissions.can_use_workspace).
    return can_use_workspace(user)


def visible_filesystems(user) -> QuerySet[FileSystem]:
    if not can_use_memory(user):
        return FileSystem.objects.none()
    return FileSystem.objects.filter(Q(owner=user) | Q(team_id__in=team_ids(user)))


def can_edit_filesystem(user, filesystem: FileSystem) -> bool:
    if not can_use_memory(user):
        return False
    if filesystem.owner_id is not None:
        return filesystem.owner_id == user.pk
    return filesystem.team_id is not None and is_team_admin(user, filesystem.team_id)
