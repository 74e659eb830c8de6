"""The analyst's page: every scored run, trends per route and target, and the candidate eval cases
the analyst drafted, waiting for a reviewer (reviewed by the validator's own review view)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from router import gateway

from . import permissions, selectors

PAGE_SIZE = 25
CANDIDATE_PAGE_SIZE = 10


@login_required
def page(request):
    if not permissions.can_view_analyst(request.user):
        raise Http404("The analyst's page is for staff and team admins.")
    scores = permissions.visible_scores(request.user)
    listing = scores.select_related("task", "team").defer("blocked_reasons")
    page_obj = Paginator(listing, PAGE_SIZE).get_page(request.GET.get("page"))
    page_obj.object_list = selectors.scores_for_viewer(request.user, page_obj.object_list)
    can_review = permissions.can_review_eval_candidates(request.user)
    candidates = (Paginator(selectors.analyst_candidates(permissions.reviewable_candidates(request.user)),
                            CANDIDATE_PAGE_SIZE).get_page(request.GET.get("cpage")) if can_review else None)
    context = {
        "page": page_obj, "trends": selectors.trends(scores), "summary": selectors.summary(scores),
        "candidates": candidates, "offline": gateway.offline_mode(), "trend_days": selectors.TREND_DAYS,
    }
    template = "analyst/page.html#scores" if request.htmx and request.GET.get("page") else "analyst/page.html"
    return render(request, template, context)
