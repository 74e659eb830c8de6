"""Who may see model usage and manage routing: superusers manage routing; team admins see their
team's usage; every team member picks their own model."""

from __future__ import annotations

from lindy.permissions import admin_team_ids, can_use_workspace, is_superuser

__all__ = [
    "admin_team_ids", "can_choose_model_only", "can_manage_models", "can_use_workspace", "can_view_assignment",
    "can_view_team_usage", "is_superuser",
]


def can_view_team_usage(user) -> bool:
    """Models: team admins see their team's usage; superusers manage routing."""
    return is_superuser(user) or bool(admin_team_ids(user))


def can_manage_models(user) -> bool:
    return is_superuser(user)


def can_choose_model_only(user) -> bool:
    """Team members who do not see the Models section still pick their own model there."""
    return can_use_workspace(user) and not can_view_team_usage(user)


def can_view_assignment(user, subject_id: int) -> bool:
    """'Why this model?' answers for the user themself and superusers."""
    return is_superuser(user) or getattr(user, "pk", None) == subject_id
