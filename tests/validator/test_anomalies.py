"""Block-rate anomalies: the hourly job against a simulated month of decisions (no alert at a
steady rate), a scripted jump (exactly one alert), the alert's numbers, and the router's guardrail
reading it."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from router.services import guardrails
from tests.router.helpers import cheap_target, offline_evidence, route, variant
from validator import anomalies, tasks
from validator.models import BlockRateAlert, BlockRateHour, Decision

pytestmark = pytest.mark.django_db

START = datetime(2026, 10, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def _decisions(cast, *, hours: int, rates: dict, rng: random.Random, start=START, jump=None, variant_of=None):
    """Decisions hour by hour: rates = {tool: (per hour, block rate)}; `jump` = (tool, from hour,
    to hour, rate) replaces one tool's rate for a while."""
    rows = []
    for h in range(hours):
        at = start + h * HOUR
        for tool, (per_hour, rate) in rates.items():
            if jump and tool == jump[0] and jump[1] <= h < jump[2]:
                rate = jump[3]
            for i in range(per_hour):
                blocked = rng.random() < rate
                rows.append(Decision(
                    team=cast.team, user=cast.member, tool=tool, effect="third_party", approved=not blocked,
                    status="blocked" if blocked else "executed", created_at=at + timedelta(seconds=37 * i + 1),
                    prompt_variant=(variant_of or {}).get(tool, ""),
                ))
    Decision.objects.bulk_create(rows, batch_size=2000)


def _run_hourly(hours: int, start=START):
    raised = []
    for h in range(1, hours + 1):
        raised += anomalies.block_rate_alerts_check(now=start + h * HOUR + timedelta(minutes=10))
    return raised


def test_binomial_tail_is_exact():
    assert anomalies.binomial_sf(0, 10, 0.3) == 1.0
    assert anomalies.binomial_sf(11, 10, 0.3) == 0.0
    assert anomalies.binomial_sf(10, 10, 0.5) == pytest.approx(0.5 ** 10)
    assert anomalies.binomial_sf(2, 3, 0.5) == pytest.approx(0.5)


def test_a_steady_rate_over_a_simulated_month_raises_no_alert(cast):
    hours = 30 * 24
    _decisions(cast, hours=hours, rng=random.Random(7), rates={
        "send_email": (12, 0.10), "pay_invoice": (3, 0.35), "post_slack_message": (6, 0.05),
    }, variant_of={"send_email": "default", "pay_invoice": "default", "post_slack_message": "terse"})
    assert _run_hourly(hours) == []
    assert not BlockRateAlert.objects.exists()
    # Every ended hour was rolled up once, per tool and per variant.
    assert BlockRateHour.objects.filter(dimension="tool", key="send_email").count() == hours
    assert BlockRateHour.objects.filter(dimension="variant").values("key").distinct().count() == 2


def test_a_scripted_jump_raises_exactly_one_alert_with_its_numbers(cast):
    hours = 12 * 24
    jump_from, jump_to = 9 * 24, 9 * 24 + 8  # eight hours at 50 % on day 10, then back to 10 %
    _decisions(cast, hours=hours, rng=random.Random(11), rates={
        "send_email": (12, 0.10), "post_slack_message": (6, 0.05),
    }, jump=("send_email", jump_from, jump_to, 0.5))
    raised = _run_hourly(hours)
    assert len(raised) == 1 and BlockRateAlert.objects.count() == 1
    alert = BlockRateAlert.objects.get()
    assert (alert.dimension, alert.key) == ("tool", "send_email")
    # Raised within the jump's first hours (12 validations an hour: a 50 % hour is not always certain).
    assert START + jump_from * HOUR <= alert.window_start < START + (jump_from + 4) * HOUR
    assert alert.total == 12 and alert.blocked >= 4 and alert.p_value < alert.alpha == 1e-6
    assert 0.05 < alert.baseline_rate < 0.15 and alert.hours_anomalous >= 1
    # Quiet for a day after the jump: the episode is closed.
    assert alert.status == BlockRateAlert.Status.CLOSED


def test_the_job_is_idempotent_within_an_hour(cast):
    _decisions(cast, hours=9 * 24 + 2, rng=random.Random(3), rates={"send_email": (12, 0.1)},
               jump=("send_email", 9 * 24, 9 * 24 + 2, 0.9))
    _run_hourly(9 * 24 + 1)
    now = START + (9 * 24 + 1) * HOUR + timedelta(minutes=10)
    again = anomalies.block_rate_alerts_check(now=now)
    assert again == [] and BlockRateAlert.objects.count() == 1
    assert BlockRateAlert.objects.get().hours_anomalous == 1


def test_the_beat_task_runs_the_check(cast, settings):
    assert tasks.block_rate_anomalies.apply().get() == 0


def test_an_alert_on_the_candidates_variant_rolls_back_and_others_hold(cast, monkeypatch):
    email = route("email.draft")
    variant(email, "flash-tuned")
    offline_evidence(email, cheap_target(), "flash-tuned")
    from router import services as router_services

    rollout = router_services.rollout_start(route=email, candidate=cheap_target(), candidate_variant="flash-tuned")
    monkeypatch.setitem(guardrails._HOOKS, "email.draft", [anomalies.guardrail_findings])
    now = START
    common = dict(window_start=now, window_end=now + HOUR, blocked=9, total=12, baseline_blocked=100,
                  baseline_total=1000, p_value=1e-9, alpha=1e-6, last_anomalous_at=now)
    tool_alert = BlockRateAlert.objects.create(dimension="tool", key="send_email", **common)
    held = guardrails.evaluate(rollout)
    assert held["decision"] == "hold" and any("tool send_email jumped to 9/12" in p for p in held["pending"])
    BlockRateAlert.objects.create(dimension="variant", key="flash-tuned", **common)
    result = guardrails.evaluate(rollout)
    assert result["decision"] == "roll_back"
    assert any("prompt variant flash-tuned" in p for p in result["problems"])
    tool_alert.delete()
