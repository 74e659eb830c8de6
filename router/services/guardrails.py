"""The guardrail job: ramps a rollout stage by stage on held evidence, rolls back on certain harm.

For each running rollout it compares the candidate arm with the baseline arm, from the current
stage's start (never a sliding window: an always-valid sequence needs a fixed start), with users
as the unit (sticky buckets randomize users, not calls: each user contributes their own mean):
- error rate, latency and cost per call (each user's share of errors; mean latency and cost of
  their successful calls),
- every online eval metric (each user's mean score: judge scores and outcome signals such as
  validator blocks, heavy edits and user ratings, router.services.scores),
- retention: the share of each arm's users still active `retention_days` after their first call
  (its cohort counts from the rollout's start: a user keeps their arm across stages).
Each comparison is an always-valid one-sided sequential test (router.sequential), and the metrics
share the stage's alpha by Holm's step-down; the stages with both arms share the rollout's
`alpha` evenly. So the chance that any metric rolls back a candidate no worse than its margins,
over the whole rollout and however often this job looks, stays under `alpha`
(tests/router/test_family_error.py). A metric is compared once both arms have
`min_scored_calls` users (`min_retention_users` for retention). Then:
- any metric certainly worse than its margin rolls back, with the numbers in the reason;
- "not enough evidence yet" holds the stage, and says which: a metric short of its sample, a
  metric whose estimate is worse than its margin without being certain yet, a stage younger
  than its minimum duration or with fewer scored candidate calls than it needs, no online
  scores at all, and a sample-ratio mismatch of users (broken bucketing: the arms cannot be
  compared);
- otherwise the stage has held its evidence: ramp to the next one, or, at the last stage,
  complete the rollout (the candidate becomes the baseline).
A metric within its margin but not yet certain ("unsure") does not hold a stage: requiring
proof of non-inferiority on every metric would need thousands of scored calls per arm at a 1 %
stage. It is listed as such in the notes, with its bounds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from .. import selectors
from ..models import Rollout
from ..sequential import Arm, ArmComparison, compare, holm, srm_p_value
from . import rollouts, scores
from .online_eval import judge_pending_samples

logger = logging.getLogger(__name__)
NOT_YET = "not enough evidence yet"

# Signals the route's owner watches itself (e.g. the validator's block-rate anomalies), registered
# from its AppConfig.ready(): fn(rollout, now) -> [{"verdict": "harm" | "hold", "line": str}].
# "harm" rolls the rollout back; "hold" keeps its stage.
_HOOKS: dict[str, list[Callable]] = {}


def register_guardrail_hook(route: str, fn: Callable) -> None:
    hooks = _HOOKS.setdefault(route, [])
    if fn not in hooks:
        hooks.append(fn)


def _hook_findings(rollout: Rollout, now) -> list[dict]:
    findings = []
    for fn in _HOOKS.get(rollout.route.name, []):
        try:
            findings += fn(rollout, now)
        except Exception:  # a broken signal holds the stage rather than letting it ramp blind
            logger.exception("guardrail hook %s failed for rollout %s", fn, rollout.pk)
            findings.append({"verdict": "hold", "line": f"the owner's guardrail signal {fn.__module__} failed"})
    return findings


def stage_alpha(rollout: Rollout) -> float:
    """The share of the rollout's alpha one stage may spend. Each stage starts its sequences
    afresh (its own users, from its start), so the rollout's alpha is split evenly across the
    stages that have both arms (a 100 % stage has no baseline to compare with): over the whole
    rollout the chance of a false rollback stays under alpha."""
    comparable = sum(1 for stage in rollout.stages or [] if 0 < float(stage["percent"]) < 100)
    return rollout.alpha / max(1, comparable)


def _bounds(result: ArmComparison, fmt: str, sign: int = 1) -> str:
    """The always-valid interval of the difference, in the metric's own units."""
    lo, hi = sorted((sign * result.lower, sign * result.upper))
    return f"difference {sign * result.difference:{fmt}}, always-valid bound [{lo:{fmt}}, {hi:{fmt}}]"


def _checks(rollout: Rollout, calls: dict, metric_stats: dict, retention: dict, *,
            alpha: float | None = None) -> list[dict]:
    """One entry per guardrail metric: its line, and verdict harm / safe / unsure / short, with
    users as the unit. The family (every metric listed, short ones included) shares `alpha` (the
    stage's share of the rollout's) by Holm's step-down (router.sequential.holm)."""
    alpha = stage_alpha(rollout) if alpha is None else alpha
    tuning = settings.ROUTER_GUARDRAIL_SEQUENTIAL_TUNING
    need = rollout.min_scored_calls
    entries: list[dict] = []  # {"metric", "head" | "short", "arms", "margin", "fmt", "sign", "tail"}

    def short(name: str, line: str):
        entries.append({"metric": name, "line": line})

    def tested(name: str, head: str, candidate: Arm, baseline: Arm, margin: float, fmt: str, sign: int,
               tail: str = ""):
        entries.append({"metric": name, "head": head, "arms": (candidate, baseline), "margin": margin,
                        "fmt": fmt, "sign": sign, "tail": tail})

    base, cand = calls["baseline"], calls["candidate"]
    sizes = f"n={cand['users']}/{base['users']} users, {cand['calls']}/{base['calls']} calls"
    head = f"error rate {cand['error_rate']:.1%} on the candidate vs {base['error_rate']:.1%} on baseline"
    if min(base["users"], cand["users"]) < max(need, 2):
        short("errors", f"{head} ({sizes}, {need} users needed per arm)")
    else:
        # Goodness is each user's share of calls without an error.
        tested("errors", f"{head} (margin {rollout.error_margin:.0%}, {sizes}",
               Arm(cand["users"], 1 - cand["error_rate"], cand["error_var"]),
               Arm(base["users"], 1 - base["error_rate"], base["error_var"]), rollout.error_margin, ".1%", -1)

    sizes = f"n={cand['ok_users']}/{base['ok_users']} users"
    for name, margin_share, fmt, suffix in (("latency", rollout.latency_margin, ".0f", " ms"),
                                            ("cost", rollout.cost_margin, ".6f", " USD")):
        mean, var = f"{name}_mean", f"{name}_var"  # selectors.arm_calls: per user, over successful calls
        head = (f"{name} per call {cand[mean]:{fmt}}{suffix} on the candidate vs {base[mean]:{fmt}}{suffix} "
                f"on baseline")
        if min(base["ok_users"], cand["ok_users"]) < max(need, 2):
            short(name, f"{head} ({sizes}, {need} users with a successful call needed per arm)")
            continue
        # Lower is better: compare the negated values; the margin is a share of the baseline's mean.
        margin = margin_share * base[mean]
        tested(name, f"{head} (margin +{margin_share:.0%}, {sizes}",
               Arm(cand["ok_users"], -cand[mean], cand[var]), Arm(base["ok_users"], -base[mean], base[var]),
               margin, fmt, -1, suffix)

    for name, arms in sorted(metric_stats.items()):
        definition = scores.metric(name)
        b, c = arms.get("baseline") or {}, arms.get("candidate") or {}
        nb, nc = b.get("n", 0), c.get("n", 0)
        if definition is None:
            continue  # a metric no app declares any more: nobody knows which way is better
        direction = "higher" if definition.higher_is_better else "lower"
        if nb < max(need, 2) or nc < max(need, 2):
            short(name, f"{name}: n={nc} candidate / {nb} baseline users, {need} needed per arm")
            continue
        tested(name, f"{name}: candidate {c['mean']:.3f} vs baseline {b['mean']:.3f} ({direction} is better, "
               f"margin {rollout.score_margin}, n={nc}/{nb} users, {c.get('calls', nc)}/{b.get('calls', nb)} calls",
               Arm(nc, definition.goodness(c["mean"]), c["var"]), Arm(nb, definition.goodness(b["mean"]), b["var"]),
               rollout.score_margin, ".3f", 1 if definition.higher_is_better else -1)

    rb, rc = retention["baseline"], retention["candidate"]
    head = f"{rollout.retention_days}-day retention {rc['rate']:.1%} on the candidate vs {rb['rate']:.1%} on baseline"
    sizes = f"n={rc['cohort']}/{rb['cohort']}"
    if min(rb["cohort"], rc["cohort"]) < max(rollout.min_retention_users, 2):
        short("retention", f"{head} (cohorts {sizes} users, {rollout.min_retention_users} needed per arm)")
    else:
        tested("retention", f"{head} (margin {rollout.retention_margin:.0%}, {sizes}",
               Arm.binary(rc["cohort"], rc["retained"]), Arm.binary(rb["cohort"], rb["retained"]),
               rollout.retention_margin, ".1%", 1)

    def at(entry):
        candidate, baseline = entry["arms"]
        return lambda level: compare(candidate, baseline, margin=entry["margin"], alpha=level, tuning=tuning)

    family = holm({e["metric"]: at(e) for e in entries if "arms" in e}, alpha=alpha, family=len(entries))
    out = []
    for entry in entries:
        if "arms" not in entry:
            out.append({"metric": entry["metric"], "line": entry["line"], "verdict": "short"})
            continue
        result, level = family[entry["metric"]]
        line = (f"{entry['head']}; {_bounds(result, entry['fmt'], entry['sign'])}{entry['tail']} at Holm level "
                f"{level:.2g} of {len(entries)} metrics)")
        out.append({"metric": entry["metric"], "line": line, "verdict": result.verdict,
                    "test": {**result.as_dict(), "level": level}})
    return out


def _srm(rollout: Rollout, now) -> dict:
    """Sample-ratio check of the stage: do non-internal users split between the arms as the
    stage's percentage says? A mismatch means bucketing (or recording) is broken."""
    share = float(rollout.percent) / 100
    since = rollout.stage_started_at or rollout.created_at
    users = selectors.stage_users(rollout, since=since)
    total = users["baseline"] + users["candidate"]
    out = {"users": users, "expected_candidate_share": share, "p_value": None, "mismatch": False}
    if not 0 < share < 1 or min(total * share, total * (1 - share)) < 5:
        out["note"] = (f"sample-ratio check: {users['candidate']} candidate / {users['baseline']} baseline users in "
                       f"this stage, too few to test a {share:.0%} split (5 expected per arm)")
        return out
    p = srm_p_value(users, {"candidate": share, "baseline": 1 - share})
    out["p_value"] = p
    out["mismatch"] = p < settings.ROUTER_GUARDRAIL_SRM_P
    verdict = "MISMATCH: bucketing looks broken" if out["mismatch"] else "consistent"
    out["note"] = (f"sample-ratio check: {users['candidate']} candidate / {users['baseline']} baseline users in this "
                   f"stage for a {share:.0%} split, p={p:.2g} ({verdict})")
    return out


def evaluate(rollout: Rollout, now=None) -> dict:
    """What the guardrails say about a rollout now: roll_back, hold, ramp or complete, and why."""
    now = now or timezone.now()
    calls = selectors.arm_calls(rollout, now=now)
    metric_stats = selectors.arm_scores(rollout, now=now)
    retention = selectors.arm_retention(rollout, now=now)
    checks = _checks(rollout, calls, metric_stats, retention)
    problems = [c["line"] for c in checks if c["verdict"] == "harm"]
    # At 100 % nobody is left on the baseline: there is nothing to compare, and nothing to wait for.
    both_arms = 0 < float(rollout.percent) < 100
    waits = ("short", "leaning_worse") if both_arms else ("leaning_worse",)
    pending = [f"{NOT_YET}: {c['line']}" for c in checks if c["verdict"] in waits]
    notes = [c["line"] + (" (within its margin, not yet certain)" if c["verdict"] == "unsure" else "")
             for c in checks if c["verdict"] in ("safe", "unsure")]
    if not both_arms:
        notes.append(f"at {float(rollout.percent):g}% every user is on the candidate: no baseline arm to compare with")
    elif not metric_stats:
        pending.append(f"{NOT_YET}: no online eval scores yet ({rollout.min_scored_calls} per arm needed)")
    for finding in _hook_findings(rollout, now):
        if finding["verdict"] == "harm":
            problems.append(finding["line"])
        else:
            pending.append(f"held: {finding['line']}")

    srm = _srm(rollout, now)
    (pending if srm["mismatch"] else notes).append(srm["note"])

    stage = rollout.stage
    if rollout.stage_started_at:
        # A resume restarts the minimum duration, not the stage's sequences.
        resumed = (rollout.events.filter(kind="resumed", created_at__gte=rollout.stage_started_at)
                   .aggregate(at=Max("created_at"))["at"])
        in_stage = now - max(rollout.stage_started_at, resumed or rollout.stage_started_at)
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
        decision = "complete"
    else:
        decision = "ramp"
    return {
        "decision": decision, "problems": problems, "pending": pending, "notes": notes, "checks": checks,
        "srm": srm, "alpha": stage_alpha(rollout), "calls": calls, "scores": metric_stats, "retention": retention,
        "stage_samples": stage_samples, "checked_at": now.isoformat(),
    }


def _evidence(result: dict) -> dict:
    keys = ("calls", "scores", "retention", "stage_samples", "notes", "checks", "srm", "alpha")
    return {k: result[k] for k in keys}


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
                reason=f"Guardrail: candidate certainly worse than baseline beyond its margin (always-valid "
                f"sequential test, alpha {rollout.alpha:g} over the rollout, {result['alpha']:.2g} this stage, "
                f"Holm across metrics): " + "; ".join(result["problems"]) + ".",
                evidence=_evidence(result),
            )
        elif decision == "ramp":
            nxt = rollout.next_stage
            assert nxt is not None  # evaluate() decides "ramp" only when there is a next stage
            healthy = "; ".join(result["notes"]) or "no regression"
            rollouts.rollout_ramp(
                rollout=rollout, from_stage=rollout.stage_index,
                reason=f"Guardrail: stage {rollout.percent}% held its evidence for its minimum duration with "
                f"{result['stage_samples']} scored candidate calls; {healthy}. Next stage {nxt['percent']:g}%.",
                evidence=_evidence(result),
            )
        elif decision == "complete":
            healthy = "; ".join(result["notes"]) or "no regression"
            rollouts.rollout_complete(
                rollout=rollout, from_stage=rollout.stage_index,
                reason=f"Guardrail: the last stage ({rollout.percent}%) held its evidence; {healthy}. "
                f"{rollout.candidate.name} ({rollout.candidate_variant}) is now the baseline of {rollout.route.name}.",
                evidence=_evidence(result),
            )
    except ValidationError:
        # Someone (a person, or a redelivered run of this job) changed the rollout meanwhile:
        # this decision was made on a state that no longer holds.
        return "skipped"
    summary = {k: result[k] for k in ("decision", "problems", "pending", "notes", "checked_at")}
    summary["srm_mismatch"] = result["srm"]["mismatch"]
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
