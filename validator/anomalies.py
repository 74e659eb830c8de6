"""Block-rate anomalies: the seed's monitoring layer ("anomaly detection on validator block rates
catches regressions in production").

Every hour (beat: validator.tasks.block_rate_anomalies) the job
1. rolls the validated decisions of each ended hour into BlockRateHour, per tool and per prompt
   variant (the variant only for decisions a model judged), once;
2. for each tool and variant, compares the block rate of the last `VALIDATOR_ANOMALY_WINDOW_HOURS`
   with its trailing baseline (the `VALIDATOR_ANOMALY_BASELINE_HOURS` before the window) with a
   one-sided exact binomial test: the chance of at least the window's blocks if the true rate were
   the baseline's (smoothed: (blocked + ½) / (total + 1), so an empty baseline does not make one
   block infinitely surprising);
3. raises a BlockRateAlert when that chance is below `VALIDATOR_ANOMALY_ALPHA`.

False-alarm rate: each (key, hour) test is at level alpha = 1e-6 by default. With about 20 keys
(15 tools, 3 variants) checked 720 times a month, the Bonferroni bound on false alarms is
20 × 720 × 1e-6 ≈ 0.014 a month under a steady rate. A 10 % baseline still alerts within the hour
on a jump to 50 % with 20 validations, or to 30 % with about 60 (a rate this test sees, the
page shows).

Alerts are deduplicated by episode: while a key's alert is open, later anomalous hours update it
(hours, peak rate, last window); it closes after `QUIET_HOURS` without an anomalous hour. The
router's guardrail reads open alerts for the validator route (apps.py registers the hook): an
alert on a rollout's candidate prompt variant rolls it back, any other open alert holds it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Min, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from .daily_stats import VALIDATED
from .models import BlockRateAlert, BlockRateHour, BlockRateRollup, Decision

HOUR = timedelta(hours=1)
# A window needs this many validations, and its baseline this many, before a test means anything.
MIN_WINDOW = 5
MIN_BASELINE = 50
# An episode closes after this many hours without an anomalous hour.
QUIET_HOURS = 24
# A decision stamped at 10:59:59 may commit a moment later: an hour is rolled up once this has passed.
SETTLE = timedelta(minutes=5)
ROLLUP_PK = 1


def hour_floor(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), exactly (summed in log space)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
             for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def _validated(start: datetime, end: datetime):
    return Decision.objects.filter(created_at__gte=start, created_at__lt=end, status__in=VALIDATED)


def block_rates_roll_up(*, now: datetime | None = None) -> int:
    """Roll the ended hours not yet rolled up into BlockRateHour. Idempotent: an hour is written
    once (the unique constraint and the rollup row's `through`). Returns the rows written."""
    now = now or timezone.now()
    end = hour_floor(now - SETTLE)  # hours before this one have ended and settled
    horizon = end - HOUR * (settings.VALIDATOR_ANOMALY_BASELINE_HOURS + settings.VALIDATOR_ANOMALY_WINDOW_HOURS)
    with transaction.atomic():
        rollup, _ = BlockRateRollup.objects.select_for_update().get_or_create(pk=ROLLUP_PK)
        start = rollup.through + HOUR if rollup.through else None
        if start is None:
            first = _validated(horizon, end).aggregate(first=Min("created_at"))["first"]
            start = hour_floor(first) if first else end
        start = max(start, horizon)
        rows = []
        if start < end:
            blocked = Count("pk", filter=Q(approved=False))
            by_tool = (_validated(start, end).annotate(h=TruncHour("created_at")).values("h", "tool")
                       .annotate(total=Count("pk"), blocked=blocked))
            rows += [BlockRateHour(hour=r["h"], dimension="tool", key=r["tool"], total=r["total"],
                                   blocked=r["blocked"]) for r in by_tool]
            by_variant = (_validated(start, end).exclude(prompt_variant="").annotate(h=TruncHour("created_at"))
                          .values("h", "prompt_variant").annotate(total=Count("pk"), blocked=blocked))
            rows += [BlockRateHour(hour=r["h"], dimension="variant", key=r["prompt_variant"], total=r["total"],
                                   blocked=r["blocked"]) for r in by_variant]
            BlockRateHour.objects.bulk_create(rows, ignore_conflicts=True)
        if end - HOUR > (rollup.through or horizon - HOUR):
            rollup.through = end - HOUR
            rollup.save()
    return len(rows)


def window_stats(*, now: datetime) -> dict[tuple[str, str], dict]:
    """Per (dimension, key): blocked/total in the window and in the baseline before it."""
    end = hour_floor(now - SETTLE)
    window_start = end - HOUR * settings.VALIDATOR_ANOMALY_WINDOW_HOURS
    baseline_start = window_start - HOUR * settings.VALIDATOR_ANOMALY_BASELINE_HOURS
    stats: dict[tuple[str, str], dict] = defaultdict(lambda: {"blocked": 0, "total": 0, "baseline_blocked": 0,
                                                              "baseline_total": 0})
    rows = BlockRateHour.objects.filter(hour__gte=baseline_start, hour__lt=end).values_list(
        "dimension", "key", "hour", "total", "blocked")
    for dimension, key, hour, total, blocked in rows:
        entry = stats[(dimension, key)]
        prefix = "" if hour >= window_start else "baseline_"
        entry[prefix + "total"] += total
        entry[prefix + "blocked"] += blocked
    for entry in stats.values():
        entry["window_start"], entry["window_end"] = window_start, end
    return stats


def test(entry: dict, alpha: float) -> dict:
    """The window's block rate against its baseline: {testable, p_value, anomalous, rate, baseline}."""
    n, k = entry["total"], entry["blocked"]
    nb, kb = entry["baseline_total"], entry["baseline_blocked"]
    baseline = (kb + 0.5) / (nb + 1)
    if n < MIN_WINDOW or nb < MIN_BASELINE:
        return {"testable": False, "p_value": None, "anomalous": False, "rate": k / n if n else 0.0,
                "baseline": baseline}
    p_value = binomial_sf(k, n, baseline)
    return {"testable": True, "p_value": p_value, "anomalous": p_value < alpha and k / n > baseline,
            "rate": k / n, "baseline": baseline}


def block_rate_alerts_check(*, now: datetime | None = None) -> list[BlockRateAlert]:
    """The hourly job: roll up, test every tool and variant, raise (or extend) alerts and close
    quiet ones. Idempotent within an hour: a second run finds the same window, and an open alert
    already updated for it. Returns the alerts raised by this run."""
    now = now or timezone.now()
    alpha = settings.VALIDATOR_ANOMALY_ALPHA
    block_rates_roll_up(now=now)
    raised = []
    open_alerts = {(a.dimension, a.key): a for a in BlockRateAlert.objects.filter(status=BlockRateAlert.Status.OPEN)}
    for (dimension, key), entry in window_stats(now=now).items():
        result = test(entry, alpha)
        if not result["anomalous"]:
            continue
        alert = open_alerts.pop((dimension, key), None)
        if alert is not None:
            if alert.window_end < entry["window_end"]:  # a new anomalous hour of the same episode
                alert.window_end = entry["window_end"]
                alert.hours_anomalous += 1
                alert.last_anomalous_at = now
                alert.peak_rate = max(alert.peak_rate, result["rate"])
                alert.p_value = min(alert.p_value, result["p_value"])
                alert.save(update_fields=["window_end", "hours_anomalous", "last_anomalous_at", "peak_rate",
                                          "p_value"])
            continue
        alert = BlockRateAlert.objects.create(
            dimension=dimension, key=key, window_start=entry["window_start"], window_end=entry["window_end"],
            blocked=entry["blocked"], total=entry["total"], baseline_blocked=entry["baseline_blocked"],
            baseline_total=entry["baseline_total"], p_value=result["p_value"], alpha=alpha,
            peak_rate=result["rate"], last_anomalous_at=now, created_at=now,
        )
        raised.append(alert)
    # Open alerts not anomalous this hour: closed once quiet for QUIET_HOURS.
    quiet_since = now - HOUR * QUIET_HOURS
    for alert in open_alerts.values():
        if alert.last_anomalous_at <= quiet_since:
            BlockRateAlert.objects.filter(pk=alert.pk).update(status=BlockRateAlert.Status.CLOSED, closed_at=now)
    return raised


def guardrail_findings(rollout, now=None) -> list[dict]:
    """For the router's guardrail on the validator route: open block-rate alerts. One on the
    candidate's prompt variant is harm (roll back); any other holds the stage."""
    findings = []
    for alert in BlockRateAlert.objects.filter(status=BlockRateAlert.Status.OPEN).order_by("pk"):
        line = (f"validator block rate of {alert.get_dimension_display().lower()} {alert.key} jumped to "
                f"{alert.blocked}/{alert.total} ({alert.rate:.0%}) from a baseline of {alert.baseline_rate:.1%} "
                f"(binomial p={alert.p_value:.1e} < {alert.alpha:g}; alert #{alert.pk})")
        on_candidate = alert.dimension == "variant" and alert.key == rollout.candidate_variant \
            and rollout.candidate_variant != rollout.baseline_variant
        findings.append({"verdict": "harm" if on_candidate else "hold", "line": line})
    return findings
