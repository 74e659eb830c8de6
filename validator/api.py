"""The validator API for agent runtimes: check an action, list decisions, authorize one."""

# No `from __future__ import annotations` here: ninja resolves the query parameters of the
# paginated list at request time, and string annotations would not resolve then.

from datetime import datetime
from typing import Literal

from django.http import Http404
from ninja import Field, Router, Schema
from ninja.pagination import paginate

from lindy import selectors as lindy_selectors
from lindy import tool_registry as registry
from lindy.api_errors import ApiError
from lindy.counting import COUNT_AHEAD, capped_count
from lindy.pagination import BoundedLimitOffset

from . import permissions, selectors, services
from .models import Decision

router = Router(tags=["validator"])


class HistoryItemIn(Schema):
    actor: Literal["user", "assistant", "tool", "external", "system"]
    content: str = Field(..., max_length=100_000)
    name: str | None = Field(None, max_length=200)


class ActionIn(Schema):
    tool: str = Field(..., min_length=1, max_length=100)
    arguments: dict = Field(default_factory=dict)
    justification: str = Field("", max_length=20_000)


class CheckIn(Schema):
    history: list[HistoryItemIn] | None = Field(None, max_length=500)
    task_id: int | None = None
    team_id: int | None = None
    action: ActionIn


class CheckOut(Schema):
    decision_id: int
    exempt: bool
    approved: bool
    reasoning: str
    confidence: str | None
    suggestedNextStep: str | None
    evidence: dict


class DecisionOut(Schema):
    id: int
    task_id: int | None
    tool: str
    effect: str
    description: str
    arguments: dict
    justification: str
    evidence: dict
    approved: bool
    reasoning: str
    confidence: str | None
    suggestedNextStep: str | None = Field(None, alias="suggested_next_step")
    validator_failure: bool
    status: str
    model: str
    prompt_variant: str
    latency_ms: int
    input_tokens: int
    output_tokens: int
    cost: float
    created_at: datetime
    resolved_by: str | None = Field(None, alias="resolved_by.email")
    resolved_at: datetime | None
    executed_at: datetime | None
    execution_result: dict | None


StatusName = Literal["exempt", "allowed", "executed", "execution_failed", "blocked", "authorized", "dismissed", "suggestion_followed"]


def _check_out(decision: Decision) -> dict:
    return {
        "decision_id": decision.pk,
        "exempt": decision.status == Decision.Status.EXEMPT,
        "approved": decision.approved,
        "reasoning": decision.reasoning,
        "confidence": decision.confidence or None,
        "suggestedNextStep": decision.suggested_next_step,
        "evidence": decision.evidence or {},
    }


@router.post("/check", response=CheckOut, summary="Validate one action before it executes")
def check(request, payload: CheckIn):
    if (payload.history is None) == (payload.task_id is None):
        raise ApiError(400, "Send exactly one of `history` or `task_id`.")
    try:
        spec = registry.get(payload.action.tool)
    except registry.UnknownTool:
        raise ApiError(400, f"Unknown tool {payload.action.tool!r}.",
                       [{"loc": ["action", "tool"], "msg": "known tools: " + ", ".join(registry.TOOLS)}]) from None
    errors = registry.argument_errors(spec, payload.action.arguments)
    if errors:
        raise ApiError(422, "The action's arguments do not match the tool.",
                       [{"loc": ["action", "arguments"], "msg": e} for e in errors])
    user = request.user
    task = None
    if payload.task_id is not None:
        task = lindy_selectors.task_detail(user, payload.task_id)
        if not permissions.can_write_task(user, task):
            raise ApiError(403, "Only the task's owner can validate actions on it.")
        team = task.team
    else:
        team = permissions.team_for_new_object(user, payload.team_id)
    history = None
    if payload.history is not None:
        history = [
            {"seq": i + 1, "actor": item.actor, "content": item.content, "name": item.name or ""}
            for i, item in enumerate(payload.history)
        ]
    decision = services.check(
        user=user, team=team, task=task, history=history, tool=spec.name,
        arguments=payload.action.arguments, justification=payload.action.justification,
    )
    return _check_out(decision)


class CappedLimitOffset(BoundedLimitOffset):
    """limit/offset pagination whose `count` stops COUNT_AHEAD rows past the page asked for: a user
    may have 100,000 decisions, and counting them all on every call costs more than the page.
    A `count` of offset + limit + COUNT_AHEAD means "at least this many"."""

    def paginate_queryset(self, queryset, pagination, request, **params):
        offset = pagination.offset
        limit: int = min(pagination.limit, self.max_limit)
        return {
            self.items_attribute: queryset[offset:offset + limit],
            "count": capped_count(queryset, offset + limit + COUNT_AHEAD),
        }


@router.get("/decisions", response=list[DecisionOut], summary="Your validation decisions (e.g. ?status=blocked)",
            description=f"Newest first. `count` is exact up to offset + limit + {COUNT_AHEAD:,}; at that value "
                        "there may be more.")
@paginate(CappedLimitOffset)
def decision_list(request, status: StatusName | None = None):
    # The answer carries task_id, not the task, and not the stored history: leave both in the database.
    return (selectors.decision_list(request.user, status).select_related(None).select_related("resolved_by")
            .defer("history"))


@router.get("/decisions/{decision_id}", response=DecisionOut, summary="One of your decisions")
def decision_get(request, decision_id: int):
    return selectors.decision_detail(request.user, decision_id)


def _resolve(request, decision_id: int, action):
    decision = _owned(request, decision_id)
    try:
        return action(decision_id=decision.pk, user=request.user)
    except services.AlreadyResolved as exc:
        raise ApiError(409, str(exc)) from None


def _owned(request, decision_id: int) -> Decision:
    try:
        decision = selectors.decision_detail(request.user, decision_id)
    except Http404:
        raise Http404("No such decision.") from None
    if not permissions.can_authorize_decision(request.user, decision):
        raise ApiError(403, "Only the user the action was for can resolve it.")
    return decision


@router.post("/decisions/{decision_id}/authorize", response=DecisionOut,
             summary="Authorize a blocked action and run it (exactly once)")
def decision_authorize(request, decision_id: int):
    return _resolve(request, decision_id, services.decision_authorize)


@router.post("/decisions/{decision_id}/dismiss", response=DecisionOut, summary="Dismiss a blocked action")
def decision_dismiss(request, decision_id: int):
    return _resolve(request, decision_id, services.decision_dismiss)
