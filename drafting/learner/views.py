"""The learner's pages: proposals (the user's own; a team admin's team's), one proposal with its
evidence (the diff, each comparison's votes and similarities), and the judge audit."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from lindy.counting import CappedPaginator, page_number

from ..models import Proposal
from . import permissions, selectors

PAGE_SIZE = 20
COMPARISONS_PAGE = 50


def _allowed(request):
    if not permissions.can_view_learner(request.user):
        raise Http404("The learner's pages belong to team members.")


@login_required
def proposal_list(request):
    _allowed(request)
    status = request.GET.get("status") or ""
    if status and status not in Proposal.Status.values:
        status = ""
    queryset = selectors.proposal_list(request.user, status=status or None)
    asked = page_number(request.GET.get("page"))
    page = CappedPaginator(queryset, PAGE_SIZE, asked).get_page(asked)
    page.object_list = selectors.proposals_for_viewer(request.user, page.object_list)
    counts = selectors.status_counts(request.user)
    statuses = [(value, label, counts.get(value, 0)) for value, label in Proposal.Status.choices]
    context = {"page": page, "status": status, "statuses": statuses, "flagged": selectors.flagged_judges()}
    template = "drafting/learner/proposals.html#proposal-rows" if request.htmx else "drafting/learner/proposals.html"
    return render(request, template, context)


@login_required
def proposal_detail(request, proposal_id: int):
    _allowed(request)
    proposal = selectors.proposal_get(request.user, proposal_id)
    asked = page_number(request.GET.get("page"))
    page = CappedPaginator(selectors.comparisons_of(proposal), COMPARISONS_PAGE, asked).get_page(asked)
    template = "drafting/learner/proposal.html#comparison-rows" if request.htmx else "drafting/learner/proposal.html"
    return render(request, template, {"proposal": proposal, "page": page,
                                      "cited": selectors.cited_pairs(request.user, proposal)})


@login_required
def judge_audit(request):
    _allowed(request)
    return render(request, "drafting/learner/judge_audit.html", {"rows": selectors.judge_audit(request.user),
                                                                 "min_audit": selectors.MIN_AUDIT,
                                                                 "swap_floor": selectors.SWAP_FLOOR,
                                                                 "flagged": selectors.flagged_judges()})
