"""Rollouts: start, ramp, pause, resume, roll back, complete. Every change of percentage is
a RolloutEvent with its reason (and the actor, or none when the guardrail job acted)."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from .. import registry, variants
from ..models import PromptVariant, Rollout, RolloutEvent, Route, Target, default_stages
from .audit import audit_event_record
from .evidence import UNEVALUATED_CANDIDATE, Evidence, MissingEvidence, rollout_evidence, unevaluated_candidate

OVERRIDE_FORBIDDEN = "override_forbidden"
ACTIVE_ROLLOUT = "active_rollout"
GUARDRAIL_SETTINGS = {
    "score_margin", "min_scored_calls", "error_margin", "retention_days", "retention_margin", "min_retention_users",
    "alpha", "latency_margin", "cost_margin",
}

MAX_STAGE_HOURS = 24 * 365
MAX_STAGE_SAMPLES = 10_000_000


def parse_stages(text: str) -> list[dict]:
    """Stages from a form: one per line, "percent min_hours min_samples" (e.g. "5 24 50")."""
    stages = []
    for number, line in enumerate(text.strip().splitlines(), start=1):
        parts = line.replace(",", " ").split()
        if not parts:
            continue
        if len(parts) != 3:
            raise ValidationError(f"Stage line {number}: write 'percent min_hours min_samples'.")
        try:
            stages.append({"percent": float(parts[0]), "min_hours": float(parts[1]), "min_samples": int(parts[2])})
        except ValueError:
            raise ValidationError(f"Stage line {number}: numbers only.") from None
    return validate_stages(stages)


def stages_text(stages: list[dict]) -> str:
    return "\n".join(f"{_num(s['percent'])} {_num(s['min_hours'])} {s['min_samples']}" for s in stages)


def _num(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def validate_stages(stages: list[dict]) -> list[dict]:
    if not stages:
        raise ValidationError("A rollout needs at least one stage.")
    previous = 0.0
    clean = []
    for stage in stages:
        try:
            percent = float(stage["percent"])
            min_hours = float(stage.get("min_hours", 0))
            min_samples = int(stage.get("min_samples", 0))
        except (KeyError, TypeError, ValueError, OverflowError):
            raise ValidationError("Each stage has a percent, min_hours and min_samples.") from None
        if not (math.isfinite(percent) and math.isfinite(min_hours)):
            raise ValidationError("Stage numbers must be finite.")
        # A bucket is 0.01 % of users: finer percentages cannot be served.
        if round(percent, 2) != percent:
            raise ValidationError("Stage percentages have at most two decimals (a bucket is 0.01 %).")
        if not previous < percent <= 100:
            raise ValidationError("Stage percentages must rise strictly, above 0 and up to 100.")
        if min_hours < 0 or min_samples < 0:
            raise ValidationError("Minimum duration and sample size cannot be negative.")
        if min_hours > MAX_STAGE_HOURS or min_samples > MAX_STAGE_SAMPLES:
            raise ValidationError(f"A stage lasts at most {MAX_STAGE_HOURS} hours and needs at most "
                                  f"{MAX_STAGE_SAMPLES} samples.")
        clean.append({"percent": percent, "min_hours": min_hours, "min_samples": min_samples})
        previous = percent
    return clean


def _percent(value) -> Decimal:
    try:
        return Decimal(str(value)).quantize(Decimal("0.01"))
    except InvalidOperation:
        raise ValidationError("Not a percentage.") from None


def _event(rollout: Rollout, kind: str, from_percent, to_percent, reason: str, actor=None, evidence=None):
    if not (reason or "").strip():
        raise ValueError("A rollout change needs its reason.")
    event = RolloutEvent.objects.create(
        rollout=rollout, kind=kind, from_percent=from_percent, to_percent=to_percent, reason=reason,
        actor=actor if getattr(actor, "pk", None) else None, evidence=evidence or {},
    )
    # The rollout's own history keeps the evidence; the one audit log keeps who changed what.
    audit_event_record(actor=actor, action=f"rollout.{kind}", obj=rollout,
                       before=None if kind == RolloutEvent.Kind.STARTED else {"percent": str(from_percent)},
                       after={"percent": str(to_percent), "status": rollout.status, "reason": reason[:200]})
    return event


def rollout_start(
    *,
    route: Route,
    candidate: Target,
    candidate_variant: str = "default",
    stages: list[dict] | None = None,
    actor=None,
    include_internal: bool = True,
    override_reason: str = "",
    **guardrails,
) -> Rollout:
    """Start moving traffic, only on offline evidence (router.services.evidence): without it,
    MissingEvidence names what is missing, unless a superuser `actor` writes an
    `override_reason`, which the rollout keeps and shows for good."""
    stages = validate_stages(stages or default_stages())
    if candidate.pk == route.baseline_id and candidate_variant == route.baseline_variant:
        raise ValidationError("The candidate is the route's baseline already.")
    variants.check(route.name, candidate_variant)  # the owner must build the prompt it will serve
    if not PromptVariant.objects.filter(route=route, name=candidate_variant).exists():
        raise ValidationError(f"Route {route.name} has no prompt variant {candidate_variant!r}.")
    unknown = set(guardrails) - GUARDRAIL_SETTINGS
    if unknown:
        raise TypeError(f"Unknown rollout settings: {sorted(unknown)}")
    alpha = guardrails.get("alpha", 0.05)
    if not 0 < alpha < 0.5:  # the sequential test's one-sided level (router.sequential)
        raise ValidationError("alpha is a false-rollback rate between 0 and 0.5.")
    evidence = rollout_evidence(route=route, target=candidate, variant=candidate_variant)
    override_reason = (override_reason or "").strip()
    if not evidence.ok:
        if not override_reason:
            raise MissingEvidence(evidence.missing, evidence.evals_to_run)
        refusal = unevaluated_candidate(route=route, target=candidate, variant=candidate_variant)
        if refusal:
            raise ValidationError(refusal, code=UNEVALUATED_CANDIDATE)
        if registry.evidence_only(route.name):
            raise MissingEvidence([*evidence.missing, f"Route {route.name} moves only on passing offline evidence: "
                                                      "no override applies to it."])
        if not getattr(actor, "is_superuser", False):
            raise ValidationError("Only a superuser may start a rollout without offline evidence.",
                                  code=OVERRIDE_FORBIDDEN)
    else:
        override_reason = ""  # nothing was overridden
    now = timezone.now()
    try:
        with transaction.atomic():
            rollout = Rollout.objects.create(
                route=route, baseline_id=route.baseline_id, baseline_variant=route.baseline_variant,
                candidate=candidate, candidate_variant=candidate_variant, stages=stages, stage_index=0,
                percent=_percent(stages[0]["percent"]), stage_started_at=now, include_internal=include_internal,
                salt=uuid.uuid4().hex, created_by=actor if getattr(actor, "pk", None) else None,
                offline_evidence=evidence.as_dict(), override_reason=override_reason,
                override_by=actor if override_reason else None, **guardrails,
            )
            who = f"by {actor.email}" if getattr(actor, "pk", None) else "by the system"
            internal = "internal users and " if include_internal else ""
            _event(rollout, RolloutEvent.Kind.STARTED, Decimal("0"), rollout.percent,
                   f"Started {who}: {internal}{rollout.percent}% of everyone else move to "
                   f"{candidate.name} with prompt variant {candidate_variant!r}. {_evidence_line(evidence, override_reason)}",
                   actor, evidence.as_dict())
    except IntegrityError:
        raise ValidationError(f"Route {route.name} already has an active rollout.", code=ACTIVE_ROLLOUT) from None
    return rollout


def _evidence_line(evidence: Evidence, override_reason: str) -> str:
    if override_reason:
        return (f"Started WITHOUT offline evidence, by superuser override: {override_reason} "
                f"(missing: {' '.join(evidence.missing)})")
    cand, base = evidence.candidate_run, evidence.baseline_run
    assert cand is not None and base is not None  # evidence.ok
    return (f"Offline evidence: eval run {cand.pk} scored {cand.score:.3f} against the baseline's run {base.pk} at "
            f"{base.score:.3f} (margin {evidence.as_dict()['thresholds']['baseline_margin']:g}).")


def _locked(rollout: Rollout) -> Rollout:
    return Rollout.objects.select_for_update().select_related("route", "candidate").get(pk=rollout.pk)


def rollout_ramp(
    *, rollout: Rollout, reason: str, actor=None, evidence: dict | None = None, from_stage: int | None = None
) -> Rollout:
    """Move to the next stage (percentages only rise: nobody already on the candidate leaves).
    `from_stage`: ramp only if the rollout is still at that stage (a decision made on it)."""
    with transaction.atomic():
        rollout = _locked(rollout)
        if rollout.status != Rollout.Status.RUNNING:
            raise ValidationError("Only a running rollout can ramp.")
        if from_stage is not None and rollout.stage_index != from_stage:
            raise ValidationError("The rollout changed stage since this decision was made.")
        nxt = rollout.next_stage
        if nxt is None:
            raise ValidationError("The rollout is at its last stage already.")
        before = rollout.percent
        rollout.stage_index += 1
        rollout.percent = _percent(nxt["percent"])
        rollout.stage_started_at = timezone.now()
        rollout.save()
        _event(rollout, RolloutEvent.Kind.RAMPED, before, rollout.percent, reason, actor, evidence)
    return rollout


def rollout_stages_update(*, rollout: Rollout, stages: list[dict], actor=None) -> Rollout:
    """Edit the stages of an active rollout. The current percentage must stay one of the
    stages: editing never moves anyone off the candidate, it changes what comes next."""
    stages = validate_stages(stages)
    with transaction.atomic():
        rollout = _locked(rollout)
        if not rollout.is_active:
            raise ValidationError("Only an active rollout's stages can be edited.")
        current = float(rollout.percent)
        index = next((i for i, s in enumerate(stages) if abs(s["percent"] - current) < 1e-9), None)
        if index is None:
            raise ValidationError(f"The stages must include the current percentage ({_num(current)}%).")
        before, after = (stages_text(x).replace("\n", " | ") for x in (rollout.stages, stages))
        rollout.stages = stages
        rollout.stage_index = index
        rollout.save()
        who = actor.email if getattr(actor, "pk", None) else "the system"
        _event(rollout, RolloutEvent.Kind.STAGES_EDITED, rollout.percent, rollout.percent,
               f"Stages edited by {who} (percent min_hours min_samples): {before} -> "
               f"{after}. Traffic stays at {rollout.percent}%.", actor)
    return rollout


def rollout_pause(*, rollout: Rollout, actor=None, reason: str = "") -> Rollout:
    with transaction.atomic():
        rollout = _locked(rollout)
        if rollout.status != Rollout.Status.RUNNING:
            raise ValidationError("Only a running rollout can be paused.")
        rollout.status = Rollout.Status.PAUSED
        rollout.save()
        _event(rollout, RolloutEvent.Kind.PAUSED, rollout.percent, rollout.percent,
               reason or "Paused: traffic stays where it is and the guardrail job stops ramping.", actor)
    return rollout


def rollout_resume(*, rollout: Rollout, actor=None, reason: str = "") -> Rollout:
    with transaction.atomic():
        rollout = _locked(rollout)
        if rollout.status != Rollout.Status.PAUSED:
            raise ValidationError("Only a paused rollout can resume.")
        # The stage keeps its start (its sequences run on: restarting them would spend its alpha
        # again); its minimum duration counts from this event (guardrails.evaluate).
        rollout.status = Rollout.Status.RUNNING
        rollout.save()
        _event(rollout, RolloutEvent.Kind.RESUMED, rollout.percent, rollout.percent,
               reason or "Resumed: the stage's minimum duration counts again from now.", actor)
    return rollout


def rollout_roll_back(*, rollout: Rollout, reason: str, actor=None, evidence: dict | None = None) -> Rollout:
    """Everyone back on the baseline (0 %), and why. A rolled-back rollout stays ended."""
    with transaction.atomic():
        rollout = _locked(rollout)
        if not rollout.is_active:
            raise ValidationError("Only an active rollout can be rolled back.")
        before = rollout.percent
        rollout.status = Rollout.Status.ROLLED_BACK
        rollout.percent = Decimal("0")
        rollout.ended_at = timezone.now()
        rollout.save()
        _event(rollout, RolloutEvent.Kind.ROLLED_BACK, before, Decimal("0"), reason, actor, evidence)
    return rollout


def rollout_complete(
    *, rollout: Rollout, actor=None, reason: str = "", evidence: dict | None = None, from_stage: int | None = None
) -> Rollout:
    """The candidate becomes the route's baseline for everyone. `from_stage`: only if the
    rollout is still running at that stage (the guardrail job's decision was made on it)."""
    with transaction.atomic():
        rollout = _locked(rollout)
        if not rollout.is_active:
            raise ValidationError("Only an active rollout can be completed.")
        if from_stage is not None and (rollout.status != Rollout.Status.RUNNING or rollout.stage_index != from_stage):
            raise ValidationError("The rollout changed since this decision was made.")
        before = rollout.percent
        rollout.status = Rollout.Status.COMPLETED
        rollout.percent = Decimal("100")
        rollout.ended_at = timezone.now()
        rollout.save()
        route = Route.objects.select_for_update().get(pk=rollout.route_id)
        route.baseline_id = rollout.candidate_id
        route.baseline_variant = rollout.candidate_variant
        route.save()
        _event(rollout, RolloutEvent.Kind.COMPLETED, before, Decimal("100"),
               reason or f"Completed: {rollout.candidate.name} ({rollout.candidate_variant}) is now the baseline "
               f"of {route.name}.", actor, evidence)
    return rollout
