"""Reviewing blocked actions (the user's own), the decision statistics (team admins), and the
eval suite: proposing a decision as a case, reviewing candidates, and the eval matrix (ops)."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models.functions import Substr
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from lindy import tool_registry
from lindy.bounded import INT32_MAX, query_int
from lindy.counting import CappedPaginator, page_number
from router import gateway

from . import daily_stats, eval_candidates, eval_matrix, eval_suite, permissions, prompts, runner, selectors, services
from .models import Decision, EvalCandidate

PAGE_SIZE = 20
FILTERS = {"blocked": Decision.Status.BLOCKED, "all": None}
LIST_DEFERRED = ("history", "evidence", "execution_result", "justification", "reasoning", "failure_reason",
                 "suggested_next_step")


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
    # The rows show the action, task, status and time: the history the validator saw and its
    # evidence (often kilobytes each) stay in the table until a decision is opened.
    # The reason's first characters only: one line per row, the full text stays on the decision.
    queryset = queryset.defer(*LIST_DEFERRED)
    asked = page_number(request.GET.get("page"))
    page = CappedPaginator(queryset, PAGE_SIZE, asked, deferred_join=True).get_page(asked)
    page.object_list = page.object_list.annotate(reason_line=Substr("reasoning", 1, REASON_CHARS))
    template = "validator/blocked.html#decision-rows" if request.htmx else "validator/blocked.html"
    return render(request, template, {"page": page, "show": show, "groups": _similar_groups(page),
                                      "confidence_legend": CONFIDENCE_LEGEND})


REASON_CHARS = 160
CONFIDENCE_LEGEND = (
    ("High", "the code checks and the validator agree; the verdict rests on what you wrote, or on its absence."),
    ("Medium", "the checks passed or failed only in part; read the evidence before you decide."),
    ("Low", "the validator was unsure or could not give a verdict; treat it as a question for you."),
)


def _reason_line(decision) -> str:
    text = " ".join((getattr(decision, "reason_line", "") or "").split())
    return text if len(text) < REASON_CHARS - 1 else text.rsplit(" ", 1)[0] + " …"


def _similar_groups(page) -> list[dict]:
    """The page's rows with repeats folded: one after another, the same action, status and
    reason are one row, "3 similar", the others listed under it (the list's order kept)."""
    groups: list[dict] = []
    previous = None
    for decision in page:
        decision.reason_text = _reason_line(decision)
        key = (decision.tool, decision.description, decision.status, decision.reason_text)
        if groups and key == previous:
            groups[-1]["others"].append(decision)
        else:
            groups.append({"first": decision, "others": []})
        previous = key
    return groups


def _recorded_only(decision: Decision) -> bool:
    try:
        return runner.get().recorded_only(decision.tool, [decision.team_id], decision.user)
    except runner.NoRunner:
        return True


def _proposal_context(request, decision: Decision) -> dict:
    candidate = EvalCandidate.objects.filter(decision=decision).first()
    can_propose = (candidate is None and eval_candidates.suggested_outcome(decision) is not None
                   and permissions.can_propose_eval_case(request.user, decision))
    return {"decision": decision, "candidate": candidate, "can_propose": can_propose,
            "suggested_outcome": eval_candidates.suggested_outcome(decision)}


_USER_WORDS = ((re.compile(r"^Ask the user\b"), "Have the assistant ask you"),
               (re.compile(r"\bwhat they want\b"), "what you want"),
               (re.compile(r"\bthe user's\b"), "your"), (re.compile(r"\bThe user's\b"), "Your"),
               (re.compile(r"\bthe user\b"), "you"), (re.compile(r"\bThe user\b"), "You"))
_STATUS_FOR_YOU: dict[str, str] = {Decision.Status.AUTHORIZED: "Authorized by you", Decision.Status.DISMISSED: "Dismissed by you",
                   Decision.Status.SUGGESTION_FOLLOWED: "You sent the suggestion back to the task"}


def for_you(text: str) -> str:
    """The validator's words (written about "the user") as the page's reader, who is that user,
    reads them: "you", "your"."""
    for pattern, words in _USER_WORDS:
        text = pattern.sub(words, text or "")
    return text


def status_for_you(decision: Decision) -> str:
    return _STATUS_FOR_YOU.get(decision.status, decision.get_status_display())


def _detail_context(request, decision: Decision) -> dict:
    following = selectors.next_waiting(request.user, besides=decision.pk)
    return {
        "failed_checks": [for_you(check) for check in selectors.failed_checks(decision)],
        "moves_money": selectors.moves_money(decision),
        "needs_confirmation": selectors.needs_confirmation(decision),
        "next_decision": following,
        "confidence_legend": CONFIDENCE_LEGEND,
        "recorded_only": _recorded_only(decision),
        "decision": decision,
        "history": selectors.history_around(decision),
        "argument_rows": [(str(key).replace("_", " ").capitalize(), key, value)
                          for key, value in decision.argument_rows],
        "argument_checks": [dict(r, reason_for_you=for_you(r.get("reason") or ""))
                            for r in ((decision.evidence or {}).get("arguments") or {}).get("results") or ()],
        "tool_label": tool_registry.label(decision.tool),
        "reasoning": for_you(decision.reasoning),
        "suggestion": for_you(tool_registry.plain(decision.suggested_next_step or "")),
        "status_words": status_for_you(decision),
        "can_resolve": decision.is_open and permissions.can_authorize_decision(request.user, decision),
        **_proposal_context(request, decision),
    }


@login_required
def decision_detail(request, decision_id: int):
    _reviewer_only(request)
    decision = selectors.decision_detail(request.user, decision_id)
    context = _detail_context(request, decision)
    after = query_int(request.GET, "after", low=1, high=INT32_MAX, default=0)
    if after:
        # The decision just resolved, one link away (its outcome stays on its own page).
        context["previous"] = selectors.decision_list(request.user).filter(pk=after).defer(
            *LIST_DEFERRED).first()
        if context["previous"] is not None:
            context["previous_status"] = status_for_you(context["previous"])
    return render(request, "validator/decision.html", context)


def _outcome(decision, done: str) -> tuple[str, bool]:
    """What the action really did, in words: an authorized action that failed says it failed,
    one only recorded (no live integration) says nothing was sent."""
    result = decision.execution_result or {}
    if decision.status != decision.Status.AUTHORIZED or not result:
        return done, True
    if not result.get("ok", True):
        return f"Authorized, but running it failed: {result.get('content') or 'no detail'}", False
    if result.get("adapter") == "outbox":
        return "Authorized: recorded in your outbox, not sent (no live integration).", True
    return done, True


def _resolve(request, decision_id: int, action, done: str):
    _reviewer_only(request)
    decision = selectors.decision_detail(request.user, decision_id)
    if not permissions.can_authorize_decision(request.user, decision):
        raise Http404("No such decision.")
    try:
        decision = action(decision_id=decision.pk, user=request.user)
        done, succeeded = _outcome(decision, done)
    except (services.AlreadyResolved, services.QueueUnavailable) as exc:
        done, succeeded = str(exc), False
        decision = selectors.decision_detail(request.user, decision_id)
    following = selectors.next_waiting(request.user, besides=decision.pk) if succeeded else None
    if following is not None:
        # Review in one pass: the verdict's outcome is said at the top of the next waiting decision.
        (messages.success if succeeded else messages.error)(
            request, f"{done} Next waiting: {following.description}.")
        target = f"{reverse('validator-decision', args=[following.pk])}?after={decision.pk}"
        if request.htmx:
            # A full page load (not a swap): that page shows the message and takes the focus.
            response = HttpResponse(status=204)
            response["HX-Redirect"] = target
            return response
        return redirect(target)
    if succeeded and decision.status != Decision.Status.SUGGESTION_FOLLOWED:
        done += " Nothing else is waiting for you."
    (messages.success if succeeded else messages.error)(request, done)
    if request.htmx:
        # The message travels with this response (lindy.middleware.htmx_messages), not to the next page.
        return render(request, "validator/decision.html#decision-outcome", _detail_context(request, decision))
    return redirect("validator-decision", decision_id=decision.pk)


@login_required
@require_POST
def decision_authorize(request, decision_id: int):
    """Where checks failed or money moves, the first POST answers with a confirmation restating
    the action and what failed (a page without JavaScript, in place with htmx); only the
    confirmation's own POST (`confirm=yes`) authorizes."""
    _reviewer_only(request)
    decision = selectors.decision_detail(request.user, decision_id)
    if not permissions.can_authorize_decision(request.user, decision):
        raise Http404("No such decision.")
    if decision.is_open and selectors.needs_confirmation(decision) and request.POST.get("confirm") != "yes":
        context = {**_detail_context(request, decision), "confirming": True}
        if request.htmx:
            return render(request, "validator/decision.html#decision-outcome", context)
        return render(request, "validator/confirm.html", context)
    return _resolve(request, decision_id, services.decision_authorize, "Authorized: the action ran.")


@login_required
@require_POST
def decision_dismiss(request, decision_id: int):
    return _resolve(request, decision_id, services.decision_dismiss, "Dismissed: the action will not run.")


@login_required
@require_POST
def decision_follow(request, decision_id: int):
    return _resolve(request, decision_id, services.decision_follow_suggestion,
                    "The suggestion went back to the task; the assistant continues in the background "
                    "and its result appears on the task.")


@login_required
def stats(request):
    if not permissions.can_view_decision_stats(request.user):
        raise Http404("Decision statistics are for team admins.")
    try:
        days = max(1, min(int(request.GET.get("days", 30)), daily_stats.MAX_PERIOD_DAYS))
    except ValueError:
        days = 30
    return render(request, "validator/stats.html", {"teams": selectors.team_stats(request.user, days=days),
                                                    "days": days})


@login_required
def cache_page(request):
    """Ops: what validations cost and how much of them the agent's prompt cache served, per route
    target over time, and the block-rate alerts (validator.anomalies)."""
    _matrix_viewer(request)
    try:
        days = max(1, min(int(request.GET.get("days", 30)), 90))
    except ValueError:
        days = 30
    alerts = Paginator(selectors.block_rate_alerts(), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "days": days, "costs": selectors.validation_costs(days=days), "alerts": alerts,
        "alert_chart": selectors.alert_series(list(alerts.object_list[:5])),
        "offline": gateway.offline_mode(),
        "alpha": settings.VALIDATOR_ANOMALY_ALPHA, "window_hours": settings.VALIDATOR_ANOMALY_WINDOW_HOURS,
        "baseline_hours": settings.VALIDATOR_ANOMALY_BASELINE_HOURS,
    }
    if request.htmx:
        return render(request, "validator/cache.html#alerts", context)
    return render(request, "validator/cache.html", context)


# The eval suite ------------------------------------------------------------------------------------


@login_required
@require_POST
def decision_propose_eval(request, decision_id: int):
    """One click: the decision's history and action become a candidate eval case."""
    _reviewer_only(request)
    decision = selectors.decision_detail(request.user, decision_id)
    if not permissions.can_propose_eval_case(request.user, decision):
        raise Http404("No such decision.")
    status, error = 200, ""
    try:
        eval_candidates.candidate_propose(decision=decision, user=request.user,
                                          expected=request.POST.get("expected", ""), note=request.POST.get("note", ""))
    except eval_candidates.CandidateRefused as exc:
        status, error = 400, str(exc)
    if not request.htmx and not error:
        messages.success(request, "Proposed as an eval case: a reviewer will accept or reject it.")
        return redirect("validator-decision", decision_id=decision.pk)
    context = {**_proposal_context(request, decision), "proposal_error": error}
    template = "validator/decision.html#eval-proposal" if request.htmx else "validator/decision.html"
    if not request.htmx:
        context.update(_detail_context(request, decision), proposal_error=error)
    return render(request, template, context, status=status)


def _candidate_reviewer(request):
    if not permissions.can_review_eval_candidates(request.user):
        raise Http404("Eval candidates are for staff and team admins.")


CANDIDATE_FILTERS = ("candidate", "accepted", "rejected")


@login_required
def eval_candidate_list(request):
    _candidate_reviewer(request)
    show = request.GET.get("show", "candidate")
    if show not in CANDIDATE_FILTERS:
        show = "candidate"
    queryset = (permissions.reviewable_candidates(request.user).filter(status=show)
                .select_related("team", "proposed_by", "reviewed_by"))
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "validator/eval_candidates.html", {
        "page": page, "show": show, "can_view_matrix": permissions.can_view_eval_matrix(request.user),
    })


@login_required
@require_POST
def eval_candidate_review(request, candidate_id: int):
    _candidate_reviewer(request)
    candidate = permissions.get_visible_or_404(
        permissions.reviewable_candidates(request.user).select_related("team", "proposed_by"), pk=candidate_id)
    choice = request.POST.get("decision")
    status, error = 200, ""
    if choice not in ("accept", "reject"):
        status, error = 400, "Choose accept or reject."
    else:
        try:
            candidate = eval_candidates.candidate_review(candidate=candidate, user=request.user,
                                                         accept=choice == "accept")
        except eval_candidates.CandidateRefused as exc:
            status, error = 409, str(exc)
    if request.htmx:
        return render(request, "validator/eval_candidates.html#candidate", {"candidate": candidate, "error": error},
                      status=status)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, f"Candidate {candidate.get_status_display().lower()}.")
    return redirect("validator-eval-candidates")


def _matrix_viewer(request):
    if not permissions.can_view_eval_matrix(request.user):
        raise Http404("No such page.")


@login_required
def eval_matrix_page(request):
    _matrix_viewer(request)
    matrix_id = query_int(request.GET, "matrix", low=1, high=INT32_MAX, default=0) or None
    matrix = selectors.eval_matrix(matrix_id)
    if matrix_id is not None and matrix is None:
        raise Http404("No such eval matrix.")
    cells = selectors.eval_cells(matrix)
    context = {
        "matrix": matrix, "cells": cells, "thresholds": eval_suite.THRESHOLDS, "sizes": eval_suite.MATRIX_TARGETS,
        "running": matrix is not None and matrix.status == matrix.Status.RUNNING,
        "completed_runs": sum(c.completed for c in cells), "total_runs": sum(c.total for c in cells),
        # PASS only over cells that ran: skipped ones measured nothing ("1 of 7 cells ran").
        "coverage": eval_matrix.coverage(cells),
    }
    if request.htmx:
        return render(request, "validator/evals.html#matrix", context)
    context.update(recent=selectors.recent_matrices(), candidates=selectors.candidate_counts(),
                   variants=list(prompts.VARIANTS))
    return render(request, "validator/evals.html", context)


@login_required
@require_POST
def eval_matrix_start(request):
    _matrix_viewer(request)
    targets = [eval_suite.OFFLINE_TARGET] if request.POST.get("offline_only") else None
    try:
        matrix = eval_matrix.matrix_create(targets=targets, actor=request.user)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        return redirect("validator-evals")
    eval_matrix.matrix_start(matrix)
    messages.success(request, f"Eval matrix #{matrix.pk} started: {matrix.case_count} cases per cell.")
    return redirect(f"{reverse('validator-evals')}?matrix={matrix.pk}")
