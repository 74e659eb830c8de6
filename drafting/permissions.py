"""Who sees drafts. A user sees only their own drafts (inbound mail, draft, what they sent).
Team admins see their team's numbers on the charts page (rates and counts, never a message)."""

from __future__ import annotations

from lindy.permissions import admin_team_ids, can_use_workspace, team_ids

__all__ = ["admin_team_ids", "can_view_drafts", "can_view_team_charts", "team_ids"]


def can_view_drafts(user) -> bool:
    return can_use_workspace(user)


def can_view_team_charts(user, team_id: int) -> bool:
    return team_id in admin_team_ids(user)
