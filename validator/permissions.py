"""Who may see and resolve the validator's decisions. Only the user an action was for sees its
contents or resolves it: not a team admin, not support staff. Admins see counts only."""

from __future__ import annotations

from django.db.models import QuerySet

from lindy.permissions import (
    admin_team_ids,
    can_use_workspace,
    can_write_task,
    get_visible_or_404,
    is_member,
    team_for_new_object,
    team_ids,
)

from .models import Decision

__all__ = [
    "admin_team_ids", "can_authorize_decision", "can_review_actions", "can_view_decision_stats", "can_write_task",
    "get_visible_or_404", "team_for_new_object", "team_ids", "visible_decisions",
]


def can_review_actions(user) -> bool:
    return can_use_workspace(user)


def visible_decisions(user) -> QuerySet[Decision]:
    if not can_review_actions(user):
        return Decision.objects.none()
    return Decision.objects.filter(user=user, team_id__in=team_ids(user))


def can_authorize_decision(user, decision: Decision) -> bool:
    return decision.user_id == getattr(user, "pk", None) and is_member(user, decision.team_id)


def can_view_decision_stats(user) -> bool:
    """Team admins see their teams' decision statistics (counts, never contents)."""
    return bool(admin_team_ids(user))
