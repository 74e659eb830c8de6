"""Block-rate anomalies: the seed's monitoring layer ("anomaly detection on validator block rates
catches regressions in production").

Every hour (beat: validator.tasks.block_rate_anomalies) the job
1. rolls the validated decisions of each ended hour into BlockRateHour, per tool and per prompt
   variant (the variant only for decisions a model judged), once;
2. for each tool and variant, compares the block rate of the last `VALIDATOR_ANOMALY_WINDOW_HOURS`
   with its trailing baseline (the `VALIDATOR_ANOMALY_BASELINE_HOURS` before the window) with a
   exact binomial test each way: the chance of at least the window's blocks (a rise) or of at most
   them (a drop) if the true rate were the baseline's (smoothed: (blocked + ½) / (total + 1), so
   an empty baseline does not make one block infinitely surprising);
3. raises a BlockRateAlert when either chance is below `VALIDATOR_ANOMALY_ALPHA`. A drop matters
   as much as a rise: a validator that suddenly stops blocking (40 % → 0 %) is failing open.

False-alarm rate: each (key, hour, direction) test is at level alpha = 1e-6 by default. With about
20 keys (15 tools, 3 variants) checked 720 times a month in two directions, the Bonferroni bound
on false alarms is 2 × 20 × 720 × 1e-6 ≈ 0.03 a month under a steady rate. A 10 % baseline still
alerts within the hour on a jump to 50 % with 20 validations, or to 30 % with about 60; a 40 %
baseline alerts on an hour of 0 % with about 30 validations (0.6^28 < 1e-6).

Alerts are deduplicated by episode: while a key's alert is open, later anomalous hours in the same
direction update it (hours, most extreme rate, last window); one the other way closes it and opens
another; it closes after `QUIET_HOURS` without an anomalous hour. Each new alert is pushed once to
the people and channels of channel alerts (lindy.ops_alerts: support's email, the ops Slack
channel), by the task `PUSH_TASK`. The router's guardrail reads open alerts for the validator
route (apps.py registers the hook): an alert on a rollout's candidate prompt variant rolls it
back, any other open alert holds it.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Min, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from lindy import ops_alerts, queue

from .daily_stats import VALIDATED
from .models import BlockRateAlert, BlockRateAlertPush, BlockRateHour, BlockRateRollup, Decision

logger = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
# A window needs this many validations, and its baseline this many, before a test means anything.
MIN_WINDOW = 5
MIN_BASELINE = 50
# An episode closes after this many hours without an anomalous hour.
QUIET_HOURS = 24
# A decision stamped at 10:59:59 may commit a moment later: an hour is rolled up once this has passed.
SETTLE = timedelta(minutes=5)
ROLLUP_PK = 1
PUSH_TASK = "validator.tasks.block_rate_alert_push"
RISE, DROP = BlockRateAlert.Direction.RISE, BlockRateAlert.Direction.DROP


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
    return _mass(range(k, n + 1), n, p)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), exactly (summed in log space: a tiny tail stays exact)."""
    if k >= n:
        return 1.0
    if k < 0:
        return 0.0
    if p <= 0:
        return 1.0
    if p >= 1:
        return 0.0
    return _mass(range(0, k + 1), n, p)


def _mass(outcomes: range, n: int, p: float) -> float:
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
             for i in outcomes]
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
    """The window's block rate against its baseline, both ways: {testable, p_value, anomalous,
    direction, rate, baseline}. p_value is the tail on the side the rate moved to."""
    n, k = entry["total"], entry["blocked"]
    nb, kb = entry["baseline_total"], entry["baseline_blocked"]
    baseline = (kb + 0.5) / (nb + 1)
    if n < MIN_WINDOW or nb < MIN_BASELINE:
        return {"testable": False, "p_value": None, "anomalous": False, "direction": None,
                "rate": k / n if n else 0.0, "baseline": baseline}
    rate = k / n
    direction = RISE if rate > baseline else DROP
    p_value = binomial_sf(k, n, baseline) if direction == RISE else binomial_cdf(k, n, baseline)
    return {"testable": True, "p_value": p_value, "anomalous": p_value < alpha and rate != baseline,
            "direction": direction, "rate": rate, "baseline": baseline}


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
        if alert is not None and alert.direction != result["direction"]:
            # The rate swung past its baseline the other way: that episode is over, this is another.
            BlockRateAlert.objects.filter(pk=alert.pk).update(status=BlockRateAlert.Status.CLOSED, closed_at=now)
            alert = None
        if alert is not None:
            if alert.window_end < entry["window_end"]:  # a new anomalous hour of the same episode
                alert.window_end = entry["window_end"]
                alert.hours_anomalous += 1
                alert.last_anomalous_at = now
                extreme = max if alert.direction == RISE else min
                alert.peak_rate = extreme(alert.peak_rate, result["rate"])
                alert.p_value = min(alert.p_value, result["p_value"])
                alert.save(update_fields=["window_end", "hours_anomalous", "last_anomalous_at", "peak_rate",
                                          "p_value"])
            continue
        alert = BlockRateAlert.objects.create(
            dimension=dimension, key=key, direction=result["direction"], window_start=entry["window_start"],
            window_end=entry["window_end"], blocked=entry["blocked"], total=entry["total"],
            baseline_blocked=entry["baseline_blocked"], baseline_total=entry["baseline_total"],
            p_value=result["p_value"], alpha=alpha, peak_rate=result["rate"], last_anomalous_at=now, created_at=now,
        )
        raised.append(alert)
        # Once per episode: the push is queued for the new alert only, never for a later hour of it.
        transaction.on_commit(partial(_queue_push, alert.pk))
    # Open alerts not anomalous this hour: closed once quiet for QUIET_HOURS.
    quiet_since = now - HOUR * QUIET_HOURS
    for alert in open_alerts.values():
        if alert.last_anomalous_at <= quiet_since:
            BlockRateAlert.objects.filter(pk=alert.pk).update(status=BlockRateAlert.Status.CLOSED, closed_at=now)
    return raised


def _queue_push(alert_id: int) -> None:
    queue.enqueue_or_log(PUSH_TASK, alert_id, then="the alert is on the cost & alerts page, but support was not told")


def alert_line(alert: BlockRateAlert) -> str:
    moved = "jumped" if alert.direction == RISE else "dropped"
    return (f"validator block rate of {alert.get_dimension_display().lower()} {alert.key} {moved} to "
            f"{alert.blocked}/{alert.total} ({alert.rate:.0%}) from a baseline of {alert.baseline_rate:.1%} "
            f"(binomial p={alert.p_value:.1e} < {alert.alpha:g}; alert #{alert.pk})")


def alert_text(alert: BlockRateAlert) -> tuple[str, str]:
    """Subject and body of the push: figures only, never an action's content."""
    moved = "rose" if alert.direction == RISE else "dropped"
    subject = (f"[Lindy] Validator block rate {moved}: {alert.get_dimension_display().lower()} {alert.key} at "
               f"{alert.rate:.0%} (baseline {alert.baseline_rate:.0%})")
    meaning = ("The validator is blocking far more than usual: a prompt or model change, or an attack wave."
               if alert.direction == RISE else
               "The validator is blocking far less than usual: it may be failing open (a prompt or model change "
               "that approves what it used to block), or an attack it no longer catches.")
    body = (
        f"{alert_line(alert)}.\n{meaning}\n"
        f"Window {alert.window_start:%Y-%m-%d %H:%M}–{alert.window_end:%H:%M} UTC; baseline "
        f"{alert.baseline_blocked}/{alert.baseline_total} over the {settings.VALIDATOR_ANOMALY_BASELINE_HOURS} h before.\n"
        "An open alert holds validator rollouts. Details: /validator/cache/"
    )
    return subject, body


def alert_push(*, alert_id: int) -> dict[str, bool]:
    """Tell support about one alert by every registered way (lindy.ops_alerts), each once per
    episode: the BlockRateAlertPush row is the claim. A way that is not set up gives its claim back
    (nothing was sent); one that fails gives it back and raises (the task retries it alone).
    Returns what was sent, by way."""
    alert = BlockRateAlert.objects.filter(pk=alert_id).first()
    ways = ops_alerts.ways()
    sent = {name: False for name in ways}
    if alert is None:
        return sent
    subject, body = alert_text(alert)
    for name, send in ways.items():
        try:
            with transaction.atomic():
                claim = BlockRateAlertPush.objects.create(alert=alert, way=name)
        except IntegrityError:
            continue  # told this way already
        try:
            sent[name] = bool(send(subject, body))
        except Exception:
            claim.delete()
            raise
        if not sent[name]:
            claim.delete()
    if not ways or not any(sent.values()) and not alert.pushes.exists():
        logger.warning("Block-rate alert %s: no way to tell support is set up (email or Slack)", alert.pk)
    return sent


def guardrail_findings(rollout, now=None) -> list[dict]:
    """For the router's guardrail on the validator route: open block-rate alerts. One on the
    candidate's prompt variant is harm (roll back); any other holds the stage."""
    findings = []
    for alert in BlockRateAlert.objects.filter(status=BlockRateAlert.Status.OPEN).order_by("pk"):
        line = alert_line(alert)
        on_candidate = alert.dimension == "variant" and alert.key == rollout.candidate_variant \
            and rollout.candidate_variant != rollout.baseline_variant
        findings.append({"verdict": "harm" if on_candidate else "hold", "line": line})
    return findings
