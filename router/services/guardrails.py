"""The guardrail job: ramps a healthy rollout stage by stage, rolls back a degraded one.

For each running rollout it compares the candidate arm with the baseline arm on
- error rate (once each arm has `min_scored_calls` calls),
- every online eval metric (judge scores and outcome signals, router.services.scores) once
  each arm has `min_scored_calls` scores of it: the candidate may be worse by `score_margin`,
- retention (share of each arm's users still active `retention_days` after their first call
  in the rollout) once each cohort has `min_retention_users` people.
Any comparison worse than its margin rolls the rollout back to 0 % with the numbers as the
reason. Otherwise it moves to the next stage when the current stage has lasted its minimum
duration, the candidate arm collected the stage's minimum number of scored calls, and at
least one score metric had enough samples in both arms.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from .. import selectors
from ..models import Rollout
from . import rollouts, scores
from .online_eval import judge_pending_samples

logger = logging.getLogger(__name__)


def evaluate(rollout: Rollout, now=None) -> dict:
    """What the guardrails say about a rollout now: problems (roll back), pending (hold) or ready."""
    now = now or timezone.now()
    calls = selectors.arm_calls(rollout, now=now)
    metric_stats = selectors.arm_scores(rollout, now=now)
    retention = selectors.arm_retention(rollout, now=now)
    problems: list[str] = []
    pending: list[str] = []
    notes: list[str] = []
    need = rollout.min_scored_calls

    base, cand = calls["baseline"], calls["candidate"]
    if base["calls"] >= need and cand["calls"] >= need:
        if cand["error_rate"] > base["error_rate"] + rollout.error_margin:
            problems.append(
                f"error rate {cand['error_rate']:.1%} on the candidate vs {base['error_rate']:.1%} on baseline "
                f"(margin {rollout.error_margin:.0%}, n={cand['calls']}/{base['calls']})"
            )
    judged = 0
    for name, arms in metric_stats.items():
        definition = scores.metric(name)
        b, c = arms.get("baseline"), arms.get("candidate")
        nb, nc = (b or {}).get("n", 0), (c or {}).get("n", 0)
        if definition is None or b is None or c is None or nb < need or nc < need:
            pending.append(f"{name}: n={nc} candidate / {nb} baseline, {need} needed per arm")
            continue
        judged += 1
        gb, gc = definition.goodness(b["mean"]), definition.goodness(c["mean"])
        line = (f"{name}: candidate {c['mean']:.3f} vs baseline {b['mean']:.3f} "
                f"({'higher' if definition.higher_is_better else 'lower'} is better, margin {rollout.score_margin}, "
                f"n={nc}/{nb})")
        (problems if gc < gb - rollout.score_margin else notes).append(line)
    if not judged and not pending:
        pending.append(f"no online eval scores yet ({need} per arm needed)")

    rb, rc = retention["baseline"], retention["candidate"]
    if rb["cohort"] >= rollout.min_retention_users and rc["cohort"] >= rollout.min_retention_users:
        line = (f"{rollout.retention_days}-day retention {rc['rate']:.1%} on the candidate vs {rb['rate']:.1%} "
                f"on baseline (margin {rollout.retention_margin:.0%}, n={rc['cohort']}/{rb['cohort']})")
        (problems if rc["rate"] < rb["rate"] - rollout.retention_margin else notes).append(line)
    else:
        notes.append(f"{rollout.retention_days}-day retention: cohorts of {rc['cohort']}/{rb['cohort']} users, "
                     f"{rollout.min_retention_users} needed before it counts")

    stage = rollout.stage
    if rollout.stage_started_at:
        in_stage = now - rollout.stage_started_at
        if in_stage < timedelta(hours=stage["min_hours"]):
            hours = in_stage.total_seconds() / 3600
            pending.append(f"stage at {rollout.percent}% has run {hours:.1f} h of its {stage['min_hours']:g} h minimum")
    stage_samples = selectors.scored_calls(rollout, arm="candidate", since=rollout.stage_started_at, now=now)
    if stage_samples < stage["min_samples"]:
        pending.append(f"{stage_samples} scored candidate calls in this stage, {stage['min_samples']} needed")

    if problems:
        decision = "roll_back"
    elif pending:
        decision = "hold"
    elif rollout.next_stage is None:
        decision = "ready_to_complete"
    else:
        decision = "ramp"
    return {
        "decision": decision, "problems": problems, "pending": pending, "notes": notes,
        "calls": calls, "scores": metric_stats, "retention": retention, "stage_samples": stage_samples,
        "checked_at": now.isoformat(),
    }


def _evidence(result: dict) -> dict:
    return {k: result[k] for k in ("calls", "scores", "retention", "stage_samples", "notes")}


def rollout_check(*, rollout: Rollout, now=None) -> str:
    """Evaluate one running rollout and act. Returns the decision. Idempotent: a second run
    right after a ramp holds, because the new stage has not lasted its minimum yet."""
    rollout = Rollout.objects.select_related("route", "candidate").get(pk=rollout.pk)
    if rollout.status != Rollout.Status.RUNNING:
        return "skipped"
    result = evaluate(rollout, now=now)
    decision = result["decision"]
    try:
        if decision == "roll_back":
            rollouts.rollout_roll_back(
                rollout=rollout,
                reason="Guardrail: candidate worse than baseline: " + "; ".join(result["problems"]) + ".",
                evidence=_evidence(result),
            )
        elif decision == "ramp":
            nxt = rollout.next_stage
            assert nxt is not None  # evaluate() decides "ramp" only when there is a next stage
            healthy = "; ".join(result["notes"]) or "no regression"
            rollouts.rollout_ramp(
                rollout=rollout, from_stage=rollout.stage_index,
                reason=f"Guardrail: stage {rollout.percent}% held for its minimum duration with "
                f"{result['stage_samples']} scored candidate calls; {healthy}. Next stage {nxt['percent']:g}%.",
                evidence=_evidence(result),
            )
    except ValidationError:
        # Someone (a person, or a redelivered run of this job) changed the rollout meanwhile:
        # this decision was made on a state that no longer holds.
        return "skipped"
    summary = {k: result[k] for k in ("decision", "problems", "pending", "notes", "checked_at")}
    with transaction.atomic():
        Rollout.objects.filter(pk=rollout.pk).update(last_check=summary, last_checked_at=now or timezone.now())
    return decision


def check_all(now=None) -> dict[int, str]:
    """The beat job: judge a sample of recent calls, then check every running rollout."""

    results = {}
    for rollout in Rollout.objects.filter(status=Rollout.Status.RUNNING):
        try:
            judge_pending_samples(rollout=rollout)
        except Exception:  # a judge outage must not stop the guardrails from acting on what is scored
            logger.exception("online judge failed for rollout %s", rollout.pk)
        results[rollout.pk] = rollout_check(rollout=rollout, now=now)
    return results
