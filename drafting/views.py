"""The drafts page (the user's own drafts: inbound mail, draft, what they sent, similarity,
heavy-edit flag) and the charts page (heavy-edit rate, similarity distribution, proposals)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from lindy.bounded import INT32_MAX, query_int

from . import permissions, selectors

PAGE_SIZE = 20
PERIODS = ("day", "week")
DAYS = (7, 30, 90)


def _workspace_only(request):
    if not permissions.can_view_drafts(request.user):
        raise Http404("Drafts belong to team members.")


@login_required
@require_GET
def draft_list(request):
    _workspace_only(request)
    status = request.GET.get("status", "all")
    if status not in selectors.STATUS_FILTERS:
        status = "all"
    page = Paginator(selectors.drafts_for(request.user, status), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "status": status, "statuses": list(selectors.STATUS_FILTERS),
               "counts": selectors.status_counts(request.user),
               "heavy_at": settings.LINDY_DRAFT_HEAVY_EDIT_THRESHOLD,
               "memory_fs_id": selectors.own_memory_id(request.user)}
    template = "drafting/drafts.html#draft-rows" if request.htmx else "drafting/drafts.html"
    return render(request, template, context)


@login_required
@require_GET
def draft_detail(request, draft_id: int):
    _workspace_only(request)
    draft = selectors.draft_get(request.user, draft_id)
    pair = getattr(draft, "pair", None)
    return render(request, "drafting/draft.html", {"draft": draft, "pair": pair})


def chart_params(request) -> tuple[int | None, int, str]:
    """(team id or None for the user's own, days, period), bad values answered with defaults."""
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    days = days if days in DAYS else 30
    period = request.GET.get("period", "day")
    period = period if period in PERIODS else "day"
    team_id = query_int(request.GET, "team", low=1, high=INT32_MAX, default=0) or None
    return team_id, days, period


@login_required
@require_GET
def charts(request):
    _workspace_only(request)
    team_id, days, period = chart_params(request)
    data = selectors.charts(user=request.user, team_id=team_id, days=days, period=period)
    admin_teams = [m.team for m in request.user.memberships.select_related("team")
                   if m.team_id in permissions.admin_team_ids(request.user)]
    return render(request, "drafting/charts.html", {
        "data": data, "team_id": team_id, "days": days, "period": period, "admin_teams": admin_teams,
        "days_choices": DAYS, "heavy_at": settings.LINDY_DRAFT_HEAVY_EDIT_THRESHOLD,
        "meaningful_at": settings.LINDY_DRAFT_MEANINGFUL_THRESHOLD,
    })
