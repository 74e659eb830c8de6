"""Router JSON API: routes, "why this model?", and score signals."""

from __future__ import annotations

from decimal import Decimal

from django.http import Http404
from ninja import Field, Router, Schema, Status

from lindy.api_errors import ApiError
from lindy.models import User

from . import permissions, routing, selectors, services
from .api_rollouts import router as rollouts_router
from .models import Rollout

router = Router(tags=["router"])


class AssignedTargetOut(Schema):
    id: int
    name: str
    provider: str
    host: str
    model: str
    quantization: str


class RolloutBrief(Schema):
    id: int
    percent: Decimal
    status: str
    candidate: str
    candidate_variant: str


class RouteOut(Schema):
    name: str
    description: str
    baseline: str
    baseline_variant: str
    rollout: RolloutBrief | None


class AssignmentOut(Schema):
    route: str
    user_id: int
    target: AssignedTargetOut
    prompt_variant: str
    arm: str
    reason: str = Field(..., description="explicit_choice, internal, bucket or baseline")
    explanation: str
    bucket: int | None
    rollout: RolloutBrief | None


class ScoreIn(Schema):
    metric: str = Field(..., min_length=1, max_length=60)
    value: float = Field(..., ge=0, le=1)
    source: str = Field("", max_length=60)


class ScoreOut(Schema):
    call_id: int
    metric: str
    value: float
    source: str


def _brief(rollout) -> dict | None:
    if rollout is None:
        return None
    return {"id": rollout.pk, "percent": rollout.percent, "status": rollout.status,
            "candidate": rollout.candidate.name, "candidate_variant": rollout.candidate_variant}


@router.get("/routes", response=list[RouteOut], summary="Routes with their baseline and active rollout")
def route_list(request):
    if not permissions.can_view_team_usage(request.user):
        raise Http404("No such page.")
    return [
        {"name": r.name, "description": r.description, "baseline": r.baseline.name,
         "baseline_variant": r.baseline_variant, "rollout": _brief(r.active_rollout)}
        for r in selectors.routes_overview()
    ]


@router.get("/routes/{route}/assignment", response=AssignmentOut, summary="Why this model? The target a user gets now")
def route_assignment(request, route: str, user_id: int | None = None):
    subject_id = request.user.pk if user_id is None else user_id
    if not permissions.can_view_assignment(request.user, subject_id):
        raise Http404("No such user.")
    if route not in routing.table().routes:
        raise Http404(f"No route {route!r}.")
    subject = request.user if subject_id == request.user.pk else User.objects.filter(pk=subject_id).first()
    if subject is None:
        raise Http404("No such user.")
    assignment = routing.assign(route, subject)
    rollout = None
    if assignment.rollout_id:
        rollout = Rollout.objects.select_related("candidate").get(pk=assignment.rollout_id)
    target = assignment.target
    return {
        "route": route, "user_id": subject.pk,
        "target": {"id": target.id, "name": target.name, "provider": target.provider, "host": target.host,
                   "model": target.model, "quantization": target.quantization},
        "prompt_variant": assignment.prompt_variant, "arm": assignment.arm, "reason": assignment.reason,
        "explanation": assignment.explanation, "bucket": assignment.bucket, "rollout": _brief(rollout),
    }


@router.post("/calls/{call_id}/scores", response={201: ScoreOut}, summary="Record an online eval score of a call")
def call_score(request, call_id: int, payload: ScoreIn):
    if not permissions.can_manage_models(request.user):
        raise Http404("No such call.")
    try:
        score = services.call_score_record(call_id=call_id, metric=payload.metric, value=payload.value,
                                           source=payload.source)
    except ValueError as exc:
        if "No model call" in str(exc):
            raise Http404(str(exc)) from None
        raise ApiError(422, str(exc)) from None
    return Status(201, {"call_id": score.call_id, "metric": score.metric, "value": score.value, "source": score.source})


# The rollout API for engineers (routes, rollouts, targets, evals), on the same /api/router/ prefix.
router.add_router("", rollouts_router)
