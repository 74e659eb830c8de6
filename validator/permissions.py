"""Who may see and resolve the validator's decisions. Only the user an action was for sees its
contents or resolves it: not a team admin, not support staff. Admins see counts only.

The eval suite: the matrix page is for ops (superusers), like the router's Models pages. A
decision's contents reach anyone else only when its own user proposes it as an eval case; then a
staff reviewer or the admin of the decision's team accepts or rejects the candidate."""

from __future__ import annotations

from django.db.models import QuerySet

from lindy.models import Team
from lindy.permissions import (
    admin_team_ids,
    can_use_workspace,
    can_write_task,
    get_visible_or_404,
    is_content_staff,
    is_member,
    is_superuser,
    team_for_new_object,
    team_ids,
    workspace_admin_team_ids,
)

from .models import Decision, EvalCandidate

__all__ = [
    "admin_team_ids", "can_authorize_decision", "can_propose_eval_case", "can_review_actions",
    "can_review_eval_candidates", "can_view_decision_stats", "can_view_eval_matrix", "can_write_task",
    "get_visible_or_404", "reviewable_candidates", "stats_team_ids", "team_for_new_object", "team_ids",
    "visible_decisions",
]


def can_review_actions(user) -> bool:
    return can_use_workspace(user)


def visible_decisions(user) -> QuerySet[Decision]:
    if not can_review_actions(user):
        return Decision.objects.none()
    return Decision.objects.filter(user=user, team_id__in=team_ids(user))


def can_authorize_decision(user, decision: Decision) -> bool:
    return decision.user_id == getattr(user, "pk", None) and is_member(user, decision.team_id)


def stats_team_ids(user) -> list[int]:
    """The teams whose decision counts the user sees: their own as admin; every team for a
    superuser (ops watches the validator everywhere, still counts, never contents)."""
    if is_superuser(user):
        return list(Team.objects.values_list("pk", flat=True))
    return admin_team_ids(user)


def can_view_decision_stats(user) -> bool:
    """Team admins (and superusers) see decision statistics (counts, never contents)."""
    return is_superuser(user) or bool(admin_team_ids(user))


def can_propose_eval_case(user, decision: Decision) -> bool:
    """Only the decision's own user: nobody else sees what it contains."""
    return can_authorize_decision(user, decision)


def can_view_eval_matrix(user) -> bool:
    """The eval matrix (model and prompt comparisons, cost) is for ops, as the router's pages are."""
    return is_superuser(user)


def can_review_eval_candidates(user) -> bool:
    """A candidate carries a decision's history and action arguments: bodies, so the one rule
    (lindy.permissions: support staff never read them, whatever teams they administer)."""
    return is_content_staff(user) or bool(workspace_admin_team_ids(user))


def reviewable_candidates(user) -> QuerySet[EvalCandidate]:
    """Staff review every team's candidates; a team admin reviews their own teams'."""
    if is_content_staff(user):
        return EvalCandidate.objects.all()
    # The analyst's drafts copy a decision its user did not propose: only staff see those.
    return EvalCandidate.objects.filter(team_id__in=workspace_admin_team_ids(user), source=EvalCandidate.Source.USER)
