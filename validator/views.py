"""Reviewing blocked actions (the user's own) and the decision statistics (team admins)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from . import permissions, runner, selectors, services
from .counting import CappedPaginator, page_number
from .models import Decision

PAGE_SIZE = 20
FILTERS = {"blocked": Decision.Status.BLOCKED, "all": None}


def _reviewer_only(request):
    if not permissions.can_review_actions(request.user):
        raise Http404("Blocked actions belong to team members.")


@login_required
def blocked_list(request):
    _reviewer_only(request)
    show = request.GET.get("show", "blocked")
    if show not in FILTERS:
        show = "blocked"
    queryset = selectors.decision_list(request.user, FILTERS[show])
    if show == "all":
        queryset = queryset.exclude(status=Decision.Status.EXEMPT)
    asked = page_number(request.GET.get("page"))
    page = CappedPaginator(queryset, PAGE_SIZE, asked).get_page(asked)
    template = "validator/blocked.html#decision-rows" if request.htmx else "validator/blocked.html"
    return render(request, template, {"page": page, "show": show})


def _recorded_only(decision: Decision) -> bool:
    try:
        return runner.get().recorded_only(decision.tool, [decision.team_id])
    except runner.NoRunner:
        return True


def _detail_context(request, decision: Decision) -> dict:
    return {
        "recorded_only": _recorded_only(decision),
        "decision": decision,
        "history": selectors.history_around(decision),
        "argument_rows": decision.argument_rows,
        "can_resolve": decision.is_open and permissions.can_authorize_decision(request.user, decision),
    }


@login_required
def decision_detail(request, decision_id: int):
    _reviewer_only(request)
    decision = selectors.decision_detail(request.user, decision_id)
    return render(request, "validator/decision.html", _detail_context(request, decision))


def _resolve(request, decision_id: int, action, done: str):
    _reviewer_only(request)
    decision = selectors.decision_detail(request.user, decision_id)
    if not permissions.can_authorize_decision(request.user, decision):
        raise Http404("No such decision.")
    try:
        decision = action(decision_id=decision.pk, user=request.user)
        messages.success(request, done)
    except services.AlreadyResolved as exc:
        messages.error(request, str(exc))
        decision = selectors.decision_detail(request.user, decision_id)
    if request.htmx:
        context = _detail_context(request, decision)
        context["flash"] = done
        return render(request, "validator/decision.html#decision-outcome", context)
    return redirect("validator-decision", decision_id=decision.pk)


@login_required
@require_POST
def decision_authorize(request, decision_id: int):
    return _resolve(request, decision_id, services.decision_authorize, "Authorized: the action ran.")


@login_required
@require_POST
def decision_dismiss(request, decision_id: int):
    return _resolve(request, decision_id, services.decision_dismiss, "Dismissed: the action will not run.")


@login_required
@require_POST
def decision_follow(request, decision_id: int):
    return _resolve(request, decision_id, services.decision_follow_suggestion,
                    "The suggestion was sent to the task as your instruction.")


@login_required
def stats(request):
    if not permissions.can_view_decision_stats(request.user):
        raise Http404("Decision statistics are for team admins.")
    try:
        days = max(1, min(int(request.GET.get("days", 30)), 365))
    except ValueError:
        days = 30
    return render(request, "validator/stats.html", {"teams": selectors.team_stats(request.user, days=days),
                                                    "days": days})
