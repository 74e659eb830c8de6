"""Who sees the learner's pages: every member sees their own proposals; a team admin also sees
their team members' (proposals and the judge audit). Support staff see neither (they see channel
health only)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from lindy import permissions as core


def can_view_learner(user) -> bool:
    # Proposals quote drafts and the user's edits: bodies, so the one rule (core.can_use_workspace).
    return core.can_use_workspace(user)


def visible_proposals(user, queryset: QuerySet) -> QuerySet:
    """The user's own, and every proposal of the teams they administer."""
    return queryset.filter(Q(user=user, team_id__in=core.workspace_team_ids(user))
                           | Q(team_id__in=core.workspace_admin_team_ids(user)))
