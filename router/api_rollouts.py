"""The rollout API for engineers (superusers, or a bearer token of one; everyone else 403):
a route with its baseline, variants and rollout; starting a rollout on offline evidence; pause,
resume, roll back, complete; targets; offline eval runs. Paths and field names are a contract.
Every change goes through router.services, which records it as an event with who and why."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db.models import F, Prefetch
from django.http import Http404
from ninja import Field, Query, Router, Schema, Status
from ninja.pagination import paginate
from pydantic import ValidationError as PydanticValidationError

from lindy import json_input
from lindy.api_errors import ApiError
from lindy.pagination import BoundedLimitOffset, PageIn

from . import permissions, services
from .models import EvalRun, PromptVariant, Rollout, RolloutEvent, Route, Target
from .services import evidence as evidence_service
from .services.evals import has_eval_set
from .services.rollouts import (
    ACTIVE_ROLLOUT,
    GUARDRAIL_SETTINGS,
    MAX_STAGE_HOURS,
    MAX_STAGE_SAMPLES,
    OVERRIDE_FORBIDDEN,
    UNEVALUATED_CANDIDATE,
)

router = Router(tags=["router"])

NAME = Field(..., min_length=1, max_length=120)
REASON = Field("", max_length=2000, description="Why: recorded on the rollout's event.")


def _manager(request) -> None:
    if not permissions.can_manage_models(request.user):
        raise ApiError(403, "Only superusers manage routing.")


def _messages(exc: ValidationError) -> str:
    return " ".join(exc.messages)


def _codes(exc: ValidationError) -> set:
    return {getattr(error, "code", None) for error in getattr(exc, "error_list", [exc])}


# Schemas ------------------------------------------------------------------------------------


class TargetOut(Schema):
    name: str
    model: str
    provider: str
    host: str | None
    quantization: str
    user_selectable: bool
    input_price: Decimal = Field(..., description="USD per million input tokens.")
    output_price: Decimal = Field(..., description="USD per million output tokens.")
    cache_write_price: Decimal
    cache_read_price: Decimal


class VariantOut(Schema):
    name: str
    description: str


class RolloutEventOut(Schema):
    kind: str
    from_percent: Decimal
    to_percent: Decimal
    reason: str
    actor: str | None = Field(..., description="Who made the change; null when the guardrail job did.")
    created_at: datetime


class RolloutOut(Schema):
    id: int
    route: str
    status: str
    percent: Decimal
    stage_index: int
    stage: dict
    stages: list[dict]
    baseline: str
    baseline_variant: str
    candidate: str
    candidate_variant: str
    include_internal: bool
    guardrails: dict
    offline_evidence: dict = Field(..., description="The eval runs that let it start (or what was missing).")
    override_reason: str = Field(..., description="Set when a superuser started it without offline evidence.")
    override_by: str | None
    last_check: dict = Field(..., description="The guardrail job's latest decision and why.")
    last_checked_at: datetime | None
    created_by: str | None
    created_at: datetime
    ended_at: datetime | None
    events: list[RolloutEventOut]


class EvidenceThresholdsOut(Schema):
    min_score: float
    max_error_rate: float
    baseline_margin: float


class RouteDetailOut(Schema):
    name: str
    description: str
    baseline: TargetOut
    baseline_variant: str
    variants: list[VariantOut]
    has_eval_set: bool
    evidence_thresholds: EvidenceThresholdsOut
    rollout: RolloutOut | None


class StageIn(Schema):
    percent: float = Field(..., gt=0, le=100, allow_inf_nan=False)
    min_hours: float = Field(0, ge=0, le=MAX_STAGE_HOURS, allow_inf_nan=False)
    min_samples: int = Field(0, ge=0, le=MAX_STAGE_SAMPLES)


class RolloutIn(Schema):
    target: str = NAME
    variant: str = Field("default", min_length=1, max_length=60)
    stages: list[StageIn] | None = Field(None, min_length=1, max_length=20,
                                         description="Rising percentages; the defaults when left out.")
    include_internal: bool = True
    override_reason: str = Field("", max_length=2000, description=(
        "Superusers only: start without passing offline evidence, and why. Kept on the rollout for good."))
    score_margin: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    error_margin: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    latency_margin: float | None = Field(None, ge=0, le=100, allow_inf_nan=False)
    cost_margin: float | None = Field(None, ge=0, le=100, allow_inf_nan=False)
    min_scored_calls: int | None = Field(None, ge=2, le=1_000_000)
    retention_days: int | None = Field(None, ge=1, le=90)
    retention_margin: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    min_retention_users: int | None = Field(None, ge=2, le=1_000_000)
    alpha: float | None = Field(None, ge=0.001, le=0.2, allow_inf_nan=False,
                                description="False-rollback rate of the sequential test.")


class ReasonIn(Schema):
    reason: str = REASON


class EvalIn(Schema):
    target: str = NAME
    variant: str = Field("default", min_length=1, max_length=60)


class EvalOut(Schema):
    id: int
    route: str = Field(..., alias="route.name")
    target: str = Field(..., alias="target.name")
    variant: str
    status: str
    total: int
    completed: int
    progress: int = Field(..., alias="progress_percent", description="Percent of the cases done.")
    score: float | None
    passed: bool | None = Field(..., description="Passed the offline evidence thresholds; null until it finished.")
    failures: list[str] = Field(..., description="Why it did not pass, when it did not.")
    cases_passed: int = Field(..., alias="passed_cases")
    errors: int
    cost: Decimal
    error: str
    created_by: str | None
    created_at: datetime
    finished_at: datetime | None

    @staticmethod
    def resolve_passed(run: EvalRun) -> bool | None:
        return evidence_service.run_passed(run)

    @staticmethod
    def resolve_failures(run: EvalRun) -> list[str]:
        return evidence_service.run_failures(run) if evidence_service.run_passed(run) is False else []

    @staticmethod
    def resolve_created_by(run: EvalRun) -> str | None:
        return _email(run.created_by)


# Shapes -------------------------------------------------------------------------------------


def _email(user) -> str | None:
    return user.email if user is not None else None


def _target(target: Target) -> dict:
    return {"name": target.name, "model": target.model, "provider": target.provider,
            "host": target.host.name if target.host else None, "quantization": target.quantization,
            "user_selectable": target.user_selectable, "input_price": target.input_price,
            "output_price": target.output_price, "cache_write_price": target.cache_write_price,
            "cache_read_price": target.cache_read_price}


def _rollout(rollout: Rollout) -> dict:
    return {
        "id": rollout.pk, "route": rollout.route.name, "status": rollout.status, "percent": rollout.percent,
        "stage_index": rollout.stage_index, "stage": rollout.stage, "stages": rollout.stages,
        "baseline": rollout.baseline.name, "baseline_variant": rollout.baseline_variant,
        "candidate": rollout.candidate.name, "candidate_variant": rollout.candidate_variant,
        "include_internal": rollout.include_internal,
        "guardrails": {key: getattr(rollout, key) for key in sorted(GUARDRAIL_SETTINGS)},
        "offline_evidence": rollout.offline_evidence, "override_reason": rollout.override_reason,
        "override_by": _email(rollout.override_by), "last_check": rollout.last_check,
        "last_checked_at": rollout.last_checked_at, "created_by": _email(rollout.created_by),
        "created_at": rollout.created_at, "ended_at": rollout.ended_at,
        "events": [{"kind": e.kind, "from_percent": e.from_percent, "to_percent": e.to_percent, "reason": e.reason,
                    "actor": _email(e.actor), "created_at": e.created_at} for e in rollout.events.all()],
    }


def _rollout_by_pk(pk: int) -> Rollout:
    rollout = (Rollout.objects.select_related("route", "baseline", "candidate", "override_by", "created_by")
               .prefetch_related(Prefetch("events", RolloutEvent.objects.select_related("actor")))
               .filter(pk=pk).first())
    if rollout is None:
        raise Http404(f"No rollout {pk}.")
    return rollout


def _runs():
    return (EvalRun.objects.select_related("route", "target", "created_by")
            .annotate(passed_cases=F("passed")))


def _no_nul(value: str | None, what: str) -> None:
    """PostgreSQL text cannot hold NUL: a name with one is bad input, not a database error."""
    if value and "\x00" in value:
        raise ApiError(422, f"The {what} contains a NUL character.")


def _route(name: str) -> Route:
    _no_nul(name, "route name")
    route = Route.objects.select_related("baseline__host").filter(name=name).first()
    if route is None:
        raise Http404(f"No route {name!r}.")
    return route


def _target_named(name: str) -> Target:
    target = Target.objects.filter(name=name).first()
    if target is None:
        raise ApiError(422, f"No target named {name!r}: GET /api/router/targets lists them.")
    return target


# Endpoints ----------------------------------------------------------------------------------


@router.get("/routes/{route}", response=RouteDetailOut, summary="A route: baseline, variants, rollout and evidence")
def route_detail(request, route: str):
    _manager(request)
    found = _route(route)
    active = Rollout.objects.filter(route=found, status__in=Rollout.ACTIVE).values_list("pk", flat=True).first()
    return {
        "name": found.name, "description": found.description, "baseline": _target(found.baseline),
        "baseline_variant": found.baseline_variant,
        "variants": list(PromptVariant.objects.filter(route=found).values("name", "description")),
        "has_eval_set": has_eval_set(found.name), "evidence_thresholds": evidence_service.thresholds(),
        "rollout": _rollout(_rollout_by_pk(active)) if active else None,
    }


@router.post("/routes/{route}/rollouts", response={201: RolloutOut},
             summary="Start a rollout: 409 without passing offline evidence of that (target, variant)")
def rollout_create(request, route: str, payload: RolloutIn):
    _manager(request)
    found = _route(route)
    target = _target_named(payload.target)
    guardrails = {key: value for key in sorted(GUARDRAIL_SETTINGS)
                  if (value := getattr(payload, key)) is not None}
    try:
        rollout = services.rollout_start(
            route=found, candidate=target, candidate_variant=payload.variant,
            stages=[stage.dict() for stage in payload.stages] if payload.stages else None,
            actor=request.user, include_internal=payload.include_internal,
            override_reason=payload.override_reason, **guardrails,
        )
    except evidence_service.MissingEvidence as exc:
        raise ApiError(409, _messages(exc), details=[
            {"loc": ["evidence"], "msg": line, "type": evidence_service.MISSING_EVIDENCE} for line in exc.missing
        ]) from None
    except ValidationError as exc:
        codes = _codes(exc)
        status = (409 if codes & {ACTIVE_ROLLOUT, UNEVALUATED_CANDIDATE} else 403 if OVERRIDE_FORBIDDEN in codes
                  else 422)
        raise ApiError(status, _messages(exc)) from None
    return Status(201, _rollout(_rollout_by_pk(rollout.pk)))


ACTIONS: dict[str, Callable[..., Rollout]] = {
    "pause": services.rollout_pause, "resume": services.rollout_resume,
    "rollback": services.rollout_roll_back, "complete": services.rollout_complete,
}
PAST = {"pause": "Paused", "resume": "Resumed", "complete": "Completed"}


def _act(request, rollout_id: int, action: str) -> dict:
    _manager(request)
    rollout = _rollout_by_pk(rollout_id)
    reason = _reason(request).strip()
    kwargs: dict = {"rollout": rollout, "actor": request.user}
    if action == "rollback":
        kwargs["reason"] = f"Rolled back by {request.user.email}" + (f": {reason}" if reason else ".")
    elif reason:
        kwargs["reason"] = f"{PAST[action]} by {request.user.email}: {reason}"
    try:
        ACTIONS[action](**kwargs)
    except ValidationError as exc:
        raise ApiError(409, _messages(exc)) from None
    return _rollout(_rollout_by_pk(rollout_id))


# The actions take an optional body {"reason": "..."}: an engineer may POST nothing at all.
REASON_BODY = {"requestBody": {"required": False, "content": {"application/json": {"schema": {
    "type": "object", "properties": {"reason": {"type": "string", "maxLength": 2000,
                                                 "description": "Why: recorded on the rollout's event."}}}}}}}


def _reason(request) -> str:
    if request.content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        data = {"reason": request.POST.get("reason", "")}  # `curl -X POST` and HTML forms
    elif not request.body.strip():
        return ""
    else:
        data = _json_body(request)
    if data is None:
        return ""
    if not isinstance(data, dict):
        raise ApiError(422, 'The body is {"reason": "..."}, or empty.')
    try:
        return ReasonIn(**data).reason
    except PydanticValidationError as exc:
        raise ApiError(422, f"The request is not valid: reason: {exc.errors()[0]['msg']}.") from None


def _json_body(request):
    try:
        return json_input.loads(request.body)
    except ValueError as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}") from None


@router.post("/rollouts/{rollout_id}/pause", response=RolloutOut, summary="Pause a running rollout",
             openapi_extra=REASON_BODY)
def rollout_pause(request, rollout_id: int):
    return _act(request, rollout_id, "pause")


@router.post("/rollouts/{rollout_id}/resume", response=RolloutOut, summary="Resume a paused rollout",
             openapi_extra=REASON_BODY)
def rollout_resume(request, rollout_id: int):
    return _act(request, rollout_id, "resume")


@router.post("/rollouts/{rollout_id}/rollback", response=RolloutOut, summary="Everyone back on the baseline",
             openapi_extra=REASON_BODY)
def rollout_rollback(request, rollout_id: int):
    return _act(request, rollout_id, "rollback")


@router.post("/rollouts/{rollout_id}/complete", response=RolloutOut,
             summary="The candidate becomes the route's baseline", openapi_extra=REASON_BODY)
def rollout_complete(request, rollout_id: int):
    return _act(request, rollout_id, "complete")


@router.get("/targets", response=list[TargetOut], summary="Targets: model, provider, quantization, prices")
def target_list(request, page: Query[PageIn]):
    """A list, as it always was, bounded like every other: `limit` and `offset`."""
    _manager(request)
    return [_target(target) for target in Target.objects.select_related("host").order_by("name", "pk")[page.slice]]


@router.post("/routes/{route}/evals", response={201: EvalOut},
             summary="Run the route's offline eval set against a (target, variant); poll the run for progress")
def eval_create(request, route: str, payload: EvalIn):
    _manager(request)
    found = _route(route)
    target = _target_named(payload.target)
    try:
        run = services.eval_run_start(route=found, target=target, variant=payload.variant, actor=request.user)
    except ValidationError as exc:
        raise ApiError(422, _messages(exc)) from None
    return Status(201, _runs().get(pk=run.pk))


@router.get("/evals", response=list[EvalOut], summary="Offline eval runs, newest first")
@paginate(BoundedLimitOffset)
def eval_list(request, route: str | None = None, target: str | None = None, variant: str | None = None):
    """Filter by route, target and variant names (each optional)."""
    _manager(request)
    for value, what in ((route, "route"), (target, "target"), (variant, "variant")):
        _no_nul(value, what)
    runs = _runs().order_by("-created_at", "-pk")
    if route:
        runs = runs.filter(route__name=route)
    if target:
        runs = runs.filter(target__name=target)
    if variant:
        runs = runs.filter(variant=variant)
    return runs


@router.get("/evals/{run_id}", response=EvalOut, summary="One offline eval run: status, progress, score, passed")
def eval_detail(request, run_id: int):
    _manager(request)
    run = _runs().filter(pk=run_id).first()
    if run is None:
        raise Http404(f"No eval run {run_id}.")
    return run
