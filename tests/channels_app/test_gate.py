"""The pre-send gate: opt-out, the line's ratio and its cap, checked together before every send.
Over the critical ratio a line sends no unprompted message (support is alerted) but still
answers a message the user just sent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from agent import tools as agent_tools
from channels_app import services
from channels_app.models import Channel, InboundMessage, NumberDay, OptOut, OutboundMessage, RatioAlert
from channels_app.services import gate
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.fakes.linq import FakeLinq, message_received, signed
from tests.fakes.twilio_api import FakeTwilio


@pytest.fixture
def linq():
    with FakeLinq() as fake, override_settings(**fake.settings()):
        yield fake


@pytest.fixture
def twilio():
    with FakeTwilio() as fake, override_settings(**fake.settings()):
        yield fake


@pytest.fixture
def line(db):
    return SendingNumberFactory(phone="+14155550100", daily_cap=100)


@pytest.fixture
def sms_line(db):
    return SendingNumberFactory(phone="+14155550199", kind=Channel.SMS, daily_cap=100)


@pytest.fixture
def texter(cast, line):
    # Texted in yesterday: anything sent now is unprompted.
    return TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1",
                                 imessage_capable=True, capability_checked_at=timezone.now(),
                                 first_texted_at=timezone.now() - timedelta(days=1))


def spammy(number, sent=30, received=2):
    NumberDay.objects.update_or_create(number=number, day=timezone.localdate(),
                                       defaults={"sent": sent, "received": received})


def test_unprompted_send_from_a_critical_line_is_refused_and_support_alerted(cast, linq, twilio, texter, line,
                                                                             sms_line):
    spammy(line)  # 15 sent per received, over the critical 10
    result = services.user_message_send(user=cast.member, body="Reminder: dentist at 4.")
    assert result["status"] == "refused" and not result["sent"]
    assert "critical" in result["reason"] and line.phone in result["reason"]
    refused = OutboundMessage.objects.get()
    assert (refused.refusal, refused.number, refused.channel) == ("line_critical", line, "imessage")
    assert not linq.sends() and not twilio.sends()  # the line stops: no detour through SMS either
    alert = RatioAlert.objects.get()
    assert (alert.number, alert.level, alert.ratio) == (line, "critical", 15.0)
    assert NumberDay.objects.get(number=line).sent == 30  # nothing counted for a send that did not go

    # The agent is told why.
    ctx = agent_tools.ExecutionContext(user=cast.member, team=cast.team, channel="imessage")
    told = agent_tools.execute(ctx, "reply_to_user", {"body": "Another reminder."})
    assert told.ok is False and "critical send/receive ratio" in told.content
    assert RatioAlert.objects.count() == 1  # one alert per line and day, however many refusals


def test_a_reply_to_what_the_user_just_sent_still_goes_from_a_critical_line(cast, linq, twilio, texter, line):
    spammy(line)
    body, headers = signed(message_received(sender=texter.phone, line=line.phone, text="what's my day?", chat_id="c1"))
    assert Client().post("/channels/imessage/webhook", body, content_type="application/json", **headers).status_code == 200
    assert gate.is_reply(texter)
    result = services.user_message_send(user=cast.member, body="3 meetings today.")
    assert result["sent"] and result["channel"] == "imessage"
    assert NumberDay.objects.get(number=line).sent == 31

    # Past the reply window the same send is unprompted again.
    InboundMessage.objects.update(received_at=timezone.now() - timedelta(hours=1))
    with override_settings(CHANNELS_REPLY_WINDOW_SECONDS=1800):
        assert services.user_message_send(user=cast.member, body="And later?")["status"] == "refused"


def test_an_sms_line_is_gated_too(cast, linq, twilio, texter, sms_line):
    spammy(sms_line, sent=12, received=0)
    result = services.user_message_send(user=cast.member, body="by sms", channel="sms")
    assert result["status"] == "refused" and OutboundMessage.objects.get().refusal == "line_critical"
    assert not twilio.sends()
    assert RatioAlert.objects.get().number == sms_line


def test_cap_still_falls_back_and_a_healthy_line_sends(cast, linq, twilio, texter, line, sms_line):
    spammy(line, sent=5, received=5)
    assert services.user_message_send(user=cast.member, body="fine")["channel"] == "imessage"
    line.daily_cap = 6
    line.save()
    result = services.user_message_send(user=cast.member, body="capped")
    assert (result["channel"], result["fallback"], result["sent"]) == ("sms", "cap", True)
    assert NumberDay.objects.get(number=line).capped == 1


def test_opt_out_is_checked_on_every_line(cast, linq, twilio, texter, line, sms_line):
    OptOut.objects.create(phone=texter.phone, channel=Channel.SMS, keyword="STOP")
    verdict = gate.send_check(profile=texter, number=sms_line, channel=Channel.SMS, reply=True)
    assert (verdict.allowed, verdict.refusal) == (False, "opted_out")
    assert gate.send_check(profile=texter, number=line, channel=Channel.IMESSAGE, reply=False).allowed
    assert not NumberDay.objects.filter(number=sms_line, sent__gt=0).exists()  # a refusal reserves nothing
