"""Drafts are the user's own: only they read a draft (a team admin of the same team gets 404,
like anyone else). Team admins see their team's learner proposals; support never sees mail."""

from tests.role_matrix import WORKSPACE_PAGE, Case, api, page


def member_draft(cast) -> int:
    from tests.drafting.factories import draft

    return draft(cast.member, cast.team).pk


def member_proposal(cast) -> int:
    from django.utils import timezone

    from drafting.models import Proposal

    return Proposal.objects.create(user=cast.member, team=cast.team, created_at=timezone.now()).pk


OWN_ONLY_PAGE = page(404, member=200)
OWN_ONLY_API = api(404, member=200)

CASES = [
    Case("drafting/", "GET", "/drafting/", WORKSPACE_PAGE),
    Case("drafting/charts/", "GET", "/drafting/charts/", WORKSPACE_PAGE),
    Case("drafting/<int:draft_id>/", "GET", lambda c: f"/drafting/{member_draft(c)}/", OWN_ONLY_PAGE),
    Case("drafting/learner/", "GET", "/drafting/learner/", WORKSPACE_PAGE),
    Case("drafting/learner/judge/", "GET", "/drafting/learner/judge/", WORKSPACE_PAGE),
    Case("drafting/learner/proposals/<int:proposal_id>/", "GET",
         lambda c: f"/drafting/learner/proposals/{member_proposal(c)}/", page(404, member=200, admin=200)),
    Case("api/drafting/drafts", "GET", "/api/drafting/drafts", api(200, support=404, superuser=404)),
    Case("api/drafting/charts", "GET", "/api/drafting/charts", api(200, support=404, superuser=404)),
    Case("api/drafting/drafts/<draft_id>", "GET", lambda c: f"/api/drafting/drafts/{member_draft(c)}", OWN_ONLY_API),
]
