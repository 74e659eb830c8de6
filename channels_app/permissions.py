"""Who may use and watch the channels: team members text the assistant and see their teams'
Slack channels; support staff and superusers watch channel health across teams (numbers and
ratios, never message bodies)."""

from __future__ import annotations

from lindy.permissions import (
    can_use_workspace,
    get_visible_or_404,
    is_superuser,
    is_support,
    workspace_admin_team_ids,
)

# Team channels and their memory switches go through the one rule (workspace_admin_team_ids): they
# feed team memory, which support staff never touch, whatever teams they administer.
__all__ = ["can_text_assistant", "can_view_channel_health", "can_view_channels", "get_visible_or_404",
           "workspace_admin_team_ids"]


def can_view_channel_health(user) -> bool:
    return is_superuser(user) or is_support(user)


def can_view_channels(user) -> bool:
    return can_use_workspace(user) or can_view_channel_health(user)


def can_text_assistant(user) -> bool:
    """Texting onboarding (iMessage/SMS): anyone who belongs to a team."""
    return can_use_workspace(user)
