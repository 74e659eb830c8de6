"""Offline evidence before traffic: a rollout of (route, target, variant) may start only when
the latest finished offline eval of exactly that triple on the route's eval set passed its
thresholds and is not worse than the latest eval of the route's baseline by more than the
margin (settings.ROUTER_EVAL_*). Reads only: rollout_start writes what it found."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ValidationError

from .. import gateway
from ..models import EvalRun, PromptVariant, Route, Target
from .evals import has_eval_set

MISSING_EVIDENCE = "missing_evidence"
UNEVALUATED_CANDIDATE = "unevaluated_candidate"


class MissingEvidence(ValidationError):
    """The evidence a rollout needs is not there; `missing` names each piece."""

    def __init__(self, missing: list[str], evals_to_run: list[tuple[Target, str]] | None = None):
        super().__init__("No offline evidence for this rollout: " + " ".join(missing), code=MISSING_EVIDENCE)
        self.missing = missing
        # (target, prompt variant) whose offline eval would supply a missing piece: one button each.
        self.evals_to_run = evals_to_run or []


def thresholds() -> dict:
    return {"min_score": settings.ROUTER_EVAL_MIN_SCORE, "max_error_rate": settings.ROUTER_EVAL_MAX_ERROR_RATE,
            "baseline_margin": settings.ROUTER_EVAL_BASELINE_MARGIN}


def run_failures(run: EvalRun) -> list[str]:
    """Why a run does not pass the thresholds (empty: it passes)."""
    limits = thresholds()
    if run.status != EvalRun.Status.DONE:
        return [f"eval run {run.pk} is {run.status}, not done"]
    failures = []
    if run.total == 0 or run.completed < run.total:
        failures.append(f"eval run {run.pk} ran {run.completed} of {run.total} cases")
    if run.score is None or run.score < limits["min_score"]:
        score = "no score" if run.score is None else f"score {run.score:.3f}"
        failures.append(f"eval run {run.pk} has {score}, below the threshold {limits['min_score']:g}")
    if stood_in(run):
        failures.append(f"eval run {run.pk} was answered by the offline rules, not by {run.target.name}")
    failures += [f"eval run {run.pk}: {line}" for line in run.gate_failures or []]
    error_rate = run.errors / run.total if run.total else 0.0
    if error_rate > limits["max_error_rate"]:
        failures.append(f"eval run {run.pk} errored on {run.errors} of {run.total} cases "
                        f"(at most {limits['max_error_rate']:.0%} allowed)")
    return failures


def stood_in(run: EvalRun) -> bool:
    """The offline rules answered for a real target (the product had no model keys then): with
    keys configured now, such a run says nothing about the target."""
    return run.provider_used == "offline" and run.target.provider != "offline" and not gateway.offline_mode()


def run_passed(run: EvalRun) -> bool | None:
    """Whether a finished run passes the thresholds; None while it is still queued or running."""
    if run.status in (EvalRun.Status.QUEUED, EvalRun.Status.RUNNING):
        return None
    return not run_failures(run)


def latest_finished(route: Route, target_id: int, variant: str) -> EvalRun | None:
    return (EvalRun.objects.select_related("target").filter(route=route, target_id=target_id, variant=variant,
                                   status__in=(EvalRun.Status.DONE, EvalRun.Status.FAILED))
            .order_by("-finished_at", "-pk").first())


@dataclass
class Evidence:
    missing: list[str] = field(default_factory=list)
    evals_to_run: list[tuple[Target, str]] = field(default_factory=list)
    candidate_run: EvalRun | None = None
    baseline_run: EvalRun | None = None

    @property
    def ok(self) -> bool:
        return not self.missing

    def as_dict(self) -> dict:
        def brief(run):
            return None if run is None else {"id": run.pk, "target": run.target.name, "variant": run.variant,
                                             "score": run.score, "total": run.total, "errors": run.errors}
        return {"ok": self.ok, "missing": self.missing, "candidate_run": brief(self.candidate_run),
                "baseline_run": brief(self.baseline_run), "thresholds": thresholds()}


def rollout_evidence(*, route: Route, target: Target, variant: str) -> Evidence:
    """What the offline evals say about moving `route` to (target, variant)."""
    evidence = Evidence()
    triple = f"{route.name} on {target.name} with prompt variant {variant!r}"
    if not has_eval_set(route.name):
        evidence.missing.append(f"Route {route.name} has no offline eval set (router/evals/{route.name}.jsonl).")
        return evidence
    run = latest_finished(route, target.pk, variant)
    evidence.candidate_run = run
    if run is None:
        evidence.missing.append(f"No finished offline eval of {triple}: run one "
                                f"(POST /api/router/routes/{route.name}/evals).")
        evidence.evals_to_run.append((target, variant))
    else:
        failures = run_failures(run)
        if failures:
            evidence.missing.append(f"The latest eval of {triple} did not pass: {'; '.join(failures)}.")
            evidence.evals_to_run.append((target, variant))
    base = latest_finished(route, route.baseline_id, route.baseline_variant)
    evidence.baseline_run = base
    baseline = f"the baseline {route.baseline.name} with prompt variant {route.baseline_variant!r}"
    if base is None or base.status != EvalRun.Status.DONE or base.score is None:
        evidence.missing.append(f"No finished offline eval of {baseline} to compare with: run one.")
        evidence.evals_to_run.append((route.baseline, route.baseline_variant))
    elif stood_in(base):
        evidence.missing.append(f"The latest eval of {baseline} (run {base.pk}) was answered by the offline rules: "
                                "run it again against the model.")
        evidence.evals_to_run.append((route.baseline, route.baseline_variant))
    elif run is not None and run.score is not None:
        margin = settings.ROUTER_EVAL_BASELINE_MARGIN
        if run.score < base.score - margin:
            evidence.missing.append(
                f"The candidate's eval score {run.score:.3f} (run {run.pk}) is worse than {baseline}'s "
                f"{base.score:.3f} (run {base.pk}) by more than the margin {margin:g}.")
    return evidence


def unevaluated_candidate(*, route: Route, target: Target, variant: str) -> str:
    """Why a prompt the optimizer wrote may not serve from `target` yet ("" when it may, or when a
    person wrote it). Such a prompt has never served anyone, so on every way to users (a rollout,
    the baseline), superuser or not, it needs a held-out score no worse than its parent's (the
    slice of the eval set its run kept from gepa) and its own passing offline eval on that target."""
    row = (PromptVariant.objects.filter(route=route, name=variant)
           .values_list("optimization_id", "holdout_score", "parent_holdout_score").first())
    if row is None or row[0] is None:
        return ""
    optimization_id, holdout, parent_holdout = row
    own = latest_finished(route, target.pk, variant)
    failures = run_failures(own) if own is not None else []
    if holdout is None or parent_holdout is None:
        # Its run chose it on gepa's own cases; only the held-out slice, which gepa never saw, says it
        # generalizes (router.services.optimize.score_holdout).
        why = "it was never scored on its run's held-out slice"
    elif holdout < parent_holdout:
        why = (f"it scored {holdout:.3f} on its run's held-out slice (cases the optimizer never saw), below its "
               f"parent's {parent_holdout:.3f}")
    elif own is None:
        why = "it has no finished offline eval"
    elif failures:
        why = f"its latest offline eval (run {own.pk}) did not pass: {'; '.join(failures)}"
    else:
        return ""
    return (f"Prompt variant {variant!r} was written by optimization run {optimization_id} and {why} on "
            f"{target.name}. An optimizer's candidate reaches users only after its own passing offline eval on "
            "that target; the superuser override does not apply to it.")


def baseline_evidence(*, route: Route, target: Target, variant: str) -> list[str]:
    """What is missing before `route` may be served by (target, variant) for everyone: the latest
    finished offline eval of exactly that triple on the route's eval set, passing the thresholds
    and the owning app's gate (the validator's: no dangerous action approved...). Empty: none."""
    triple = f"{route.name} on {target.name} with prompt variant {variant!r}"
    if not has_eval_set(route.name):
        return [f"Route {route.name} has no offline eval set (router/evals/{route.name}.jsonl)."]
    run = latest_finished(route, target.pk, variant)
    if run is None:
        return [f"No finished offline eval of {triple}: run one (POST /api/router/routes/{route.name}/evals)."]
    failures = run_failures(run)
    if failures:
        return [f"The latest eval of {triple} did not pass: {'; '.join(failures)}."]
    return []
