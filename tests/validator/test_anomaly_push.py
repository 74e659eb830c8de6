"""Block-rate anomalies both ways, told to support: a validator that suddenly stops blocking
(40 % → 0 % over 200 validations) raises one alert, like a jump does, and every alert is pushed
once per episode to the people and channel of channel alerts (support's email through Django's
email backend, the ops Slack channel through the real slack_sdk client against
tests/fakes/slack_api.py), by the ways channels_app registers in lindy.ops_alerts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from celery import current_app
from django.core import mail
from django.test import override_settings

from lindy import ops_alerts
from lindy import queue as lindy_queue
from tests.fakes.slack_api import BOT_TOKEN, FakeSlack
from validator import anomalies
from validator.models import BlockRateAlert, BlockRateAlertPush, Decision

pytestmark = pytest.mark.django_db

START = datetime(2026, 10, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
OPS_CHANNEL = "C0LINDYOPS"
PER_HOUR = 40


@pytest.fixture
def slack():
    with FakeSlack() as fake, override_settings(SLACK_API_BASE_URL=fake.url + "/api/",
                                                CHANNELS_ALERT_SLACK_TOKEN=BOT_TOKEN,
                                                CHANNELS_ALERT_SLACK_CHANNEL=OPS_CHANNEL):
        fake.add_channel(OPS_CHANNEL, "lindy-ops", private=True)
        yield fake


@pytest.fixture
def queued(monkeypatch):
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(lindy_queue, "enqueue", lambda name, *args, countdown=None: sent.append((name, args)))
    return sent


def run_pushes(queued) -> list[dict]:
    results = [current_app.tasks[name].apply(args=args).get() for name, args in queued
               if name == anomalies.PUSH_TASK]
    queued.clear()
    return results


def hour_of(cast, hour: int, blocked: int, tool: str = "send_email"):
    at = START + hour * HOUR
    Decision.objects.bulk_create([
        Decision(team=cast.team, user=cast.member, tool=tool, effect="third_party", approved=i >= blocked,
                 status="blocked" if i < blocked else "executed", created_at=at + timedelta(seconds=60 * i + 1))
        for i in range(PER_HOUR)
    ])


def check_after(hour: int, capture) -> list[BlockRateAlert]:
    with capture(execute=True):
        return anomalies.block_rate_alerts_check(now=START + (hour + 1) * HOUR + timedelta(minutes=10))


def test_the_lower_tail_is_exact():
    assert anomalies.binomial_cdf(0, 40, 0.4) == pytest.approx(0.6 ** 40)
    assert anomalies.binomial_cdf(40, 40, 0.4) == 1.0
    assert anomalies.binomial_cdf(1, 3, 0.5) == pytest.approx(0.5)


def test_a_drop_from_40_to_0_percent_raises_one_alert_pushed_once(cast, slack, queued,
                                                                django_capture_on_commit_callbacks):
    # 200 validations: three hours at 40 % blocked, then two at 0 %.
    for hour, blocked in enumerate([16, 16, 16, 0, 0]):
        hour_of(cast, hour, blocked)
    raised = []
    for hour in range(5):
        raised += check_after(hour, django_capture_on_commit_callbacks)
    assert Decision.objects.count() == 200
    assert len(raised) == 1 and BlockRateAlert.objects.count() == 1
    alert = BlockRateAlert.objects.get()
    assert (alert.dimension, alert.key, alert.direction) == ("tool", "send_email", "drop")
    assert (alert.blocked, alert.total) == (0, PER_HOUR) and alert.baseline_rate == pytest.approx(0.4)
    assert alert.p_value < alert.alpha
    # The second 0 % hour is the same episode: the alert grows, nothing new is raised or queued.
    assert alert.hours_anomalous == 2 and alert.status == BlockRateAlert.Status.OPEN

    assert [name for name, _ in queued] == [anomalies.PUSH_TASK]
    assert run_pushes(queued) == [{"email": True, "slack": True}]
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [cast.support.email]  # the people channel alerts go to
    assert "dropped" in mail.outbox[0].subject and "send_email" in mail.outbox[0].subject
    assert "failing open" in mail.outbox[0].body
    assert [p["channel"] for p in slack.posted] == [OPS_CHANNEL]
    assert "send_email" in slack.posted[0]["text"]

    # A redelivered push sends nothing: once per episode.
    assert anomalies.alert_push(alert_id=alert.pk) == {"email": False, "slack": False}
    assert len(mail.outbox) == 1 and len(slack.posted) == 1
    assert set(BlockRateAlertPush.objects.values_list("way", flat=True)) == {"email", "slack"}


def test_a_drop_holds_a_validator_rollout_like_a_rise(cast):
    now = START
    alert = BlockRateAlert.objects.create(
        dimension="tool", key="pay_invoice", direction="drop", window_start=now, window_end=now + HOUR, blocked=0,
        total=40, baseline_blocked=48, baseline_total=120, p_value=1e-9, alpha=1e-6, last_anomalous_at=now)
    (finding,) = anomalies.guardrail_findings(type("Rollout", (), {"candidate_variant": "x",
                                                                   "baseline_variant": "default"})())
    assert finding["verdict"] == "hold" and "dropped to 0/40" in finding["line"]
    assert f"alert #{alert.pk}" in finding["line"]


def test_a_steady_40_percent_raises_nothing_either_way(cast, queued, django_capture_on_commit_callbacks):
    for hour in range(6):
        hour_of(cast, hour, 16)
    for hour in range(6):
        assert check_after(hour, django_capture_on_commit_callbacks) == []
    assert queued == []


def test_a_failed_slack_post_is_retried_without_emailing_twice(cast, slack, queued,
                                                              django_capture_on_commit_callbacks):
    for hour, blocked in enumerate([16, 16, 16, 0]):
        hour_of(cast, hour, blocked)
    for hour in range(4):
        check_after(hour, django_capture_on_commit_callbacks)
    alert = BlockRateAlert.objects.get()
    with override_settings(CHANNELS_ALERT_SLACK_CHANNEL="C0NOWHERE"):
        with pytest.raises(Exception, match="channel_not_found"):
            anomalies.alert_push(alert_id=alert.pk)
    assert list(BlockRateAlertPush.objects.values_list("way", flat=True)) == ["email"]
    assert anomalies.alert_push(alert_id=alert.pk) == {"email": False, "slack": True}
    assert len(mail.outbox) == 1 and len(slack.posted) == 1


def test_without_any_way_set_up_nothing_is_claimed(cast, monkeypatch):
    monkeypatch.setattr(ops_alerts, "_WAYS", {"slack": lambda subject, body: False})
    alert = BlockRateAlert.objects.create(
        dimension="tool", key="send_email", window_start=START, window_end=START + HOUR, blocked=30, total=40,
        baseline_blocked=12, baseline_total=120, p_value=1e-9, alpha=1e-6, last_anomalous_at=START)
    assert anomalies.alert_push(alert_id=alert.pk) == {"slack": False}
    assert not BlockRateAlertPush.objects.exists()  # a way set up later still tells this alert
