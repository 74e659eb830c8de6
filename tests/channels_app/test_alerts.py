"""Ratio alerts reach people: one per line and day, escalated from warning to critical, emailed to
support staff through Django's email backend (locmem here) and posted to a configured Slack channel
through the real slack_sdk client (against tests/fakes/slack_api.py), each once per level; support
acknowledges them. Counts and ratios only, never a message body."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery import current_app
from django.core import mail
from django.test import override_settings
from django.utils import timezone

from channels_app import services
from channels_app.models import NumberDay, OutboundMessage, RatioAlert
from channels_app.services import queue
from lindy import queue as lindy_queue
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.conftest import client_for
from tests.fakes.slack_api import BOT_TOKEN, FakeSlack

OPS_CHANNEL = "C0LINDYOPS"


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


def run_notifications(queued) -> list[dict]:
    results = [current_app.tasks[name].apply(args=args).get() for name, args in queued
               if name == queue.RATIO_ALERT_NOTIFY]
    queued.clear()
    return results


def traffic(number, sent: int, received: int):
    NumberDay.objects.update_or_create(number=number, day=timezone.localdate(),
                                       defaults={"sent": sent, "received": received})


def test_warning_then_critical_is_one_alert_told_once_per_level(cast, slack, queued,
                                                                django_capture_on_commit_callbacks):
    line = SendingNumberFactory(phone="+14155550100", label="West 1")
    TextingProfileFactory(user=cast.member, number=line)
    OutboundMessage.objects.create(user=cast.member, number=line, channel="imessage", status="sent", body="SECRET BODY")
    traffic(line, sent=30, received=10)  # 3: a warning
    with django_capture_on_commit_callbacks(execute=True):
        assert [a.level for a in services.ratio_alerts_check()] == ["warn"]
    assert run_notifications(queued) == [{"email": True, "slack": True}]
    assert len(mail.outbox) == 1
    email = mail.outbox[0]
    assert email.to == [cast.support.email]  # support staff, nobody else
    assert "Warning" in email.subject and "+14155550100" in email.subject and "West 1" in email.subject
    assert "30" in email.body and "SECRET BODY" not in email.body
    assert [p["channel"] for p in slack.posted] == [OPS_CHANNEL]
    assert "+14155550100" in slack.posted[0]["text"]
    assert slack.calls("chat.postMessage")[0].headers["authorization"] == f"Bearer {BOT_TOKEN}"

    # The beat job again, and a redelivered notification: nothing new.
    with django_capture_on_commit_callbacks(execute=True):
        assert services.ratio_alerts_check() == []
    assert queued == []
    alert = RatioAlert.objects.get()
    assert services.ratio_alert_notify(alert_id=alert.pk) == {"email": False, "slack": False}

    # Support acknowledges; the line gets worse: the same alert escalates and asks again.
    assert services.ratio_alert_acknowledge(alert=alert, user=cast.support) is True
    traffic(line, sent=150, received=10)
    with django_capture_on_commit_callbacks(execute=True):
        assert [a.level for a in services.ratio_alerts_check()] == ["critical"]
    alert = RatioAlert.objects.get()
    assert (alert.level, alert.ratio, alert.acknowledged_at) == ("critical", 15.0, None)
    assert alert.escalated_at is not None
    assert run_notifications(queued) == [{"email": True, "slack": True}]
    assert len(mail.outbox) == 2 and "Critical" in mail.outbox[1].subject
    assert "stopped" in mail.outbox[1].body
    assert len(slack.posted) == 2
    # Never lowered: a calmer afternoon leaves the day critical.
    traffic(line, sent=150, received=50)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.ratio_alerts_check() == []
    assert RatioAlert.objects.get().level == "critical"


def test_a_failed_slack_post_is_retried_without_emailing_twice(cast, slack, queued):
    line = SendingNumberFactory()
    traffic(line, sent=12, received=0)
    alert = RatioAlert.objects.create(number=line, day=timezone.localdate(), level="critical", ratio=12.0, sent=12,
                                      received=0, threshold=10.0)
    with override_settings(CHANNELS_ALERT_SLACK_CHANNEL="C0NOWHERE"):
        with pytest.raises(Exception, match="channel_not_found"):
            services.ratio_alert_notify(alert_id=alert.pk)
    alert.refresh_from_db()
    assert (alert.emailed_level, alert.slacked_level) == ("critical", "")
    assert services.ratio_alert_notify(alert_id=alert.pk) == {"email": False, "slack": True}
    assert len(mail.outbox) == 1 and len(slack.posted) == 1


def test_the_task_retries_a_failed_delivery(cast, slack, queued, monkeypatch):
    from channels_app import tasks

    line = SendingNumberFactory()
    alert = RatioAlert.objects.create(number=line, day=timezone.localdate(), level="warn", ratio=3.0, sent=3,
                                      received=1, threshold=2.0)
    with override_settings(CHANNELS_ALERT_SLACK_CHANNEL="C0NOWHERE"):
        result = tasks.ratio_alert_notify.apply(args=(alert.pk,))
    assert result.failed()  # eager: retried in place until out of retries
    assert len(mail.outbox) == 1  # the email went once, whatever the Slack retries did


def test_without_slack_configured_support_is_still_emailed(cast, queued):
    line = SendingNumberFactory()
    alert = RatioAlert.objects.create(number=line, day=timezone.localdate(), level="warn", ratio=3.0, sent=3,
                                      received=1, threshold=2.0)
    with override_settings(CHANNELS_ALERT_EMAILS=["oncall@lindy.example"]):
        assert services.ratio_alert_notify(alert_id=alert.pk) == {"email": True, "slack": False}
    assert sorted(mail.outbox[0].to) == ["oncall@lindy.example", cast.support.email]


def test_the_gate_alerts_support_when_it_stops_a_line(cast, slack, queued, django_capture_on_commit_callbacks):
    line = SendingNumberFactory()
    TextingProfileFactory(user=cast.member, number=line, imessage_capable=True, capability_checked_at=timezone.now(),
                          first_texted_at=timezone.now() - timedelta(days=2), chat_id="c1")
    traffic(line, sent=40, received=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.user_message_send(user=cast.member, body="Unprompted")["status"] == "refused"
    assert run_notifications(queued) == [{"email": True, "slack": True}]
    assert "Critical" in mail.outbox[0].subject


def test_support_acknowledges_on_the_health_page(cast, django_assert_max_num_queries):
    line = SendingNumberFactory(phone="+14155550100")
    alert = RatioAlert.objects.create(number=line, day=timezone.localdate(), level="critical", ratio=12.0, sent=12,
                                      received=1, threshold=10.0)
    support = client_for(cast.support)
    with django_assert_max_num_queries(16):
        page = support.get("/channels/health/")
    assert f'id="alert-{alert.pk}"' in page.content.decode() and "Acknowledge" in page.content.decode()
    url = f"/channels/health/alerts/{alert.pk}/acknowledge/"
    assert client_for(cast.admin).post(url).status_code == 404
    htmx = support.post(url, HTTP_HX_REQUEST="true")
    assert htmx.status_code == 200 and b"<html" not in htmx.content
    assert cast.support.email in htmx.content.decode()
    alert.refresh_from_db()
    assert alert.acknowledged_by == cast.support and alert.acknowledged_at is not None
    assert support.post(url).status_code == 302  # again: nothing changes
    assert client_for(cast.support).post("/channels/health/alerts/999999/acknowledge/").status_code == 404


def test_a_send_that_crosses_a_threshold_raises_the_alert_as_it_is_counted(cast, queued,
                                                                            django_capture_on_commit_callbacks):
    """Issue 34: the alert comes with the statistics, not at the beat job's next check; once per
    level for the day however many sends follow."""
    from channels_app.services import pool

    line = SendingNumberFactory(daily_cap=500)
    traffic(line, sent=0, received=5)
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(10):  # 10 sent for 5 received: at the warning threshold, not over it
            assert pool.cap_reserve(number=line)
    assert not RatioAlert.objects.exists() and queued == []
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):  # 11..15 sent: over 2
            assert pool.cap_reserve(number=line)
    alert = RatioAlert.objects.get()
    assert (alert.level, alert.sent, alert.received) == ("warn", 11, 5)
    assert [name for name, _ in queued] == [queue.RATIO_ALERT_NOTIFY]
    assert run_notifications(queued) == [{"email": True, "slack": False}]
    # The scheduled check finds nothing new to raise.
    with django_capture_on_commit_callbacks(execute=True):
        assert services.ratio_alerts_check() == []
    assert queued == []
    # Over critical: the same alert escalates once; the sends after it raise nothing more.
    with django_capture_on_commit_callbacks(execute=True):
        pool.stat_add(number=line, field="sent", amount=40)  # 55 for 5: 11
        pool.stat_add(number=line, field="sent", amount=5)
        pool.stat_add(number=line, field="received")  # a reply in never raises anything
    alert = RatioAlert.objects.get()
    assert (alert.level, alert.sent) == ("critical", 55)
    assert [name for name, _ in queued] == [queue.RATIO_ALERT_NOTIFY]
    assert len(run_notifications(queued)) == 1 and len(mail.outbox) == 2
