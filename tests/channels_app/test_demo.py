"""Issue 34 part 1: the demo's texting is made by the product. Signed webhooks in, the debounce
and the agent loop, replies out through the provider clients: the channel health figures are a
recount of the stored messages, and the line over its threshold was alerted as its sends were
counted (no scheduled check runs in the demo)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from channels_app import demo as channels_demo
from channels_app import selectors
from channels_app.models import (
    InboundBundle,
    InboundMessage,
    NumberDay,
    OutboundMessage,
    RatioAlert,
    WebhookEvent,
)
from lindy.models import AgentTask, TaskEvent, User
from router.models import ModelCall
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_the_demo_texting_is_the_pipelines_own_and_its_figures_match_a_recount():
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    inbound = InboundMessage.objects.filter(provider_id__startswith="demo-")
    assert inbound.count() >= 20
    # Every text and delivery report came through a signed webhook, claimed once.
    assert WebhookEvent.objects.count() == InboundMessage.objects.count() + OutboundMessage.objects.filter(
        status="failed", channel="imessage").count()
    assert set(WebhookEvent.objects.values_list("source", flat=True)) == {"linq", "twilio"}
    # The debounce bundled them and the agent got every bundle once.
    assert not inbound.filter(bundle__isnull=True).exists()
    assert set(InboundBundle.objects.values_list("status", flat=True)) == {"dispatched"}
    # Replies went out through the providers; the undeliverable iMessages went again by SMS.
    sent = OutboundMessage.objects.filter(status="sent")
    assert sent.filter(channel="imessage").exists() and sent.filter(channel="sms", fallback_reason="imessage_failed").exists()

    assert channels_demo.recount_problems() == []
    series = selectors.ratio_series(days=14)
    for line in series["series"]:
        recount = [InboundMessage.objects.filter(number__phone=line["number"], received_at__date=day).count()
                   for day in series["labels"]]
        assert line["received"] == recount, line["number"]

    # The SMS line went over its warning threshold on the days Sarah's iMessage failed, and was
    # alerted then, by the send that took it over.
    alerts = RatioAlert.objects.filter(number__phone=channels_demo.SMS_LINE)
    assert alerts.exists() and set(alerts.values_list("level", flat=True)) == {"warn"}
    for alert in alerts:
        row = NumberDay.objects.get(number=alert.number, day=alert.day)
        assert alert.sent <= row.sent and alert.ratio > 2
        assert alert.created_at.date() == alert.day  # raised that day, when the figures were written
    page = client_for(User.objects.get(email="support@lindy.test")).get("/channels/health/")
    assert page.status_code == 200 and channels_demo.SMS_LINE in page.content.decode()

    # The texters' tasks were written by the agent loop: the user's words, the proposals it made
    # (judged by the validator) and its replies, with the agent's model calls recorded.
    umar = AgentTask.objects.filter(owner__email="user@acme.test", events__actor="user",
                                    events__content__contains="the renewal draft is on its way").distinct().first()
    assert umar is not None
    proposed = umar.events.filter(actor=TaskEvent.Actor.ASSISTANT, content__startswith="Proposed:")
    assert proposed.filter(tool_name="send_email").exists() and umar.validator_decisions.exists()
    assert umar.events.filter(actor=TaskEvent.Actor.TOOL, tool_name="reply_to_user").exists()
    assert ModelCall.objects.filter(route="agent", user__email="user@acme.test").exists()

    # Idempotent: a second seed sends no text.
    count = InboundMessage.objects.count()
    call_command("seed_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert InboundMessage.objects.count() == count
