"""Opt-out and consent: STOP and its kin, texted alone to the real webhook endpoints, opt the
person out of that channel with one confirmation; the agent's replies are then refused, recorded
and reported to it; START opts them back in (one confirmation) and sends go again."""

from __future__ import annotations

import pytest
from celery import current_app
from django.test import Client, override_settings
from django.utils import timezone

from agent import tools as agent_tools
from agent.models import OutboxEntry
from channels_app import services
from channels_app.models import Channel, Conversation, InboundMessage, OptOut, OutboundMessage
from channels_app.services import consent, queue
from lindy import queue as lindy_queue
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.conftest import client_for
from tests.fakes import twilio_api
from tests.fakes.linq import FakeLinq, message_received, signed
from tests.fakes.twilio_api import FakeTwilio, inbound_params

IMESSAGE_URL = "/channels/imessage/webhook"
SMS_URL = "/channels/sms/webhook"


@pytest.fixture
def linq():
    with FakeLinq() as fake, override_settings(**fake.settings()):
        yield fake


@pytest.fixture
def twilio():
    with FakeTwilio() as fake, override_settings(**fake.settings()):
        yield fake


@pytest.fixture
def queued(monkeypatch):
    """What the services queued (by task name), instead of the broker: the test runs them."""
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(lindy_queue, "enqueue", lambda name, *args, countdown=None: sent.append((name, args)))
    return sent


def run_queued(queued, name: str) -> list:
    """Run every queued task of that name through Celery (in process), as a worker would."""
    results = [current_app.tasks[name].apply(args=args).get() for task, args in queued if task == name]
    queued[:] = [(task, args) for task, args in queued if task != name]
    return results


@pytest.fixture
def line(db):
    return SendingNumberFactory(phone="+14155550100")


@pytest.fixture
def sms_line(db):
    return SendingNumberFactory(phone="+14155550199", kind=Channel.SMS)


@pytest.fixture
def texter(cast, line):
    return TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1",
                                 imessage_capable=True, capability_checked_at=timezone.now())


def post_linq(payload):
    body, headers = signed(payload)
    return Client().post(IMESSAGE_URL, body, content_type="application/json", **headers)


def post_twilio(params):
    sig = twilio_api.signature("http://testserver" + SMS_URL, params)
    return Client().post(SMS_URL, params, HTTP_X_TWILIO_SIGNATURE=sig)


def agent_reply(cast, body: str, channel: str = Channel.IMESSAGE):
    ctx = agent_tools.ExecutionContext(user=cast.member, team=cast.team, channel=channel)
    return agent_tools.execute(ctx, "reply_to_user", {"body": body})


@pytest.mark.parametrize("text, expected", [
    ("STOP", ("out", "STOP")), ("stop", ("out", "STOP")), (" Stop. ", ("out", "STOP")), ("StopAll", ("out", "STOPALL")),
    ("unsubscribe", ("out", "UNSUBSCRIBE")), ("CANCEL", ("out", "CANCEL")), ("end", ("out", "END")),
    ("Quit!", ("out", "QUIT")), ("start", ("in", "START")), ("UNSTOP", ("in", "UNSTOP")),
    ("stop sending me the weather", None), ("please stop", None), ("", None), ("stopp", None), ("STOP STOP", None),
])
def test_keywords_count_only_alone_in_any_case(text, expected):
    assert consent.keyword_of(text) == expected


def test_stop_then_agent_reply_is_refused_recorded_and_told_then_start_sends_again(
        cast, linq, twilio, texter, line, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert post_linq(message_received(sender=texter.phone, line=line.phone, text="STOP", chat_id="c1")).json() \
            == {"status": "stored"}
    stop = InboundMessage.objects.get()
    assert stop.text == "STOP" and stop.conversation is None  # kept, never handed to the agent
    assert not Conversation.objects.exists()
    opt_out = OptOut.objects.get()
    assert (opt_out.phone, opt_out.channel, opt_out.keyword, opt_out.profile, opt_out.number) == (
        texter.phone, "imessage", "STOP", texter, line)
    assert opt_out.active

    # The one confirmation, from the line they texted, through the real task.
    assert [name for name, _ in queued] == [queue.CONSENT_CONFIRM]
    assert run_queued(queued, queue.CONSENT_CONFIRM) == [True]
    assert [r.json["message"]["parts"][0]["value"] for r in linq.sends()] == [
        consent.OUT_NOTICE.format(channel="iMessage")]
    notice = OutboundMessage.objects.get(consent_notice=True)
    assert (notice.status, notice.channel, notice.number) == ("sent", "imessage", line)

    # The agent answers anyway: refused, recorded, and the agent reads why.
    result = agent_reply(cast, "Here is your day: 3 meetings.")
    assert result.ok is False and "opted out of iMessage" in result.content and "START" in result.content
    refused = OutboundMessage.objects.get(body="Here is your day: 3 meetings.")
    assert (refused.status, refused.refusal) == ("refused", "opted_out")
    assert OutboxEntry.objects.get(tool="reply_to_user").status == OutboxEntry.Status.FAILED
    assert len(linq.sends()) == 1 and not twilio.sends()  # no fallback to SMS either

    # A second STOP changes nothing and is not confirmed again.
    with django_capture_on_commit_callbacks(execute=True):
        post_linq(message_received(sender=texter.phone, line=line.phone, text="stop", chat_id="c1"))
    assert OptOut.objects.count() == 1 and queued == []

    # START: back in, one confirmation, and the agent's replies go again.
    with django_capture_on_commit_callbacks(execute=True):
        post_linq(message_received(sender=texter.phone, line=line.phone, text="Start", chat_id="c1"))
    opt_out.refresh_from_db()
    assert not opt_out.active and opt_out.opt_in_keyword == "START"
    assert run_queued(queued, queue.CONSENT_CONFIRM) == [True]
    assert linq.sends()[-1].json["message"]["parts"][0]["value"] == consent.IN_NOTICE.format(channel="iMessage")
    result = agent_reply(cast, "Welcome back.")
    assert result.ok is True
    assert linq.sends()[-1].json["message"]["parts"][0]["value"] == "Welcome back."
    assert not Conversation.objects.exists()  # neither keyword reached the agent


def test_confirmation_is_sent_once_even_when_the_task_runs_twice(cast, linq, texter, line, queued,
                                                                django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post_linq(message_received(sender=texter.phone, line=line.phone, text="QUIT", chat_id="c1"))
    opt_out = OptOut.objects.get()
    assert services.consent_confirm(opt_out_id=opt_out.pk, direction="out") is True
    assert services.consent_confirm(opt_out_id=opt_out.pk, direction="out") is False  # a redelivery
    assert services.consent_confirm(opt_out_id=opt_out.pk, direction="in") is False  # not back in
    assert len(linq.sends()) == 1


def test_a_failed_confirmation_gives_its_claim_back_for_the_retry(cast, linq, texter, line, queued,
                                                                 django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post_linq(message_received(sender=texter.phone, line=line.phone, text="STOP", chat_id="c1"))
    opt_out = OptOut.objects.get()
    linq.fail_sends = True
    with pytest.raises(Exception, match="500"):
        services.consent_confirm(opt_out_id=opt_out.pk, direction="out")
    opt_out.refresh_from_db()
    assert opt_out.out_confirmed_at is None
    assert OutboundMessage.objects.get(consent_notice=True).status == "failed"
    linq.fail_sends = False
    assert services.consent_confirm(opt_out_id=opt_out.pk, direction="out") is True


def test_sms_stop_opts_out_of_sms_only(cast, linq, twilio, texter, sms_line, queued,
                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert post_twilio(inbound_params(sender=texter.phone, to=sms_line.phone, body="UNSUBSCRIBE")).status_code == 200
    assert OptOut.objects.get().channel == "sms"
    run_queued(queued, queue.CONSENT_CONFIRM)
    form = twilio.sends()[0].form
    assert (form["From"], form["To"], form["Body"]) == (sms_line.phone, texter.phone, consent.OUT_NOTICE.format(
        channel="SMS"))

    sms_reply = agent_reply(cast, "By text", channel=Channel.SMS)
    assert sms_reply.ok is False and "opted out of SMS" in sms_reply.content
    assert len(twilio.sends()) == 1
    # iMessage is another channel: the user did not opt out of it.
    assert agent_reply(cast, "By iMessage").ok is True
    # ... but an iMessage failure does not fall back to the SMS they stopped.
    linq.fail_sends = True
    result = services.user_message_send(user=cast.member, body="falls back?")
    assert result["status"] == "refused" and not result["sent"]
    assert len(twilio.sends()) == 1


def test_stop_from_an_unknown_phone_is_kept_and_holds_when_they_register(cast, linq, line, queued,
                                                                        django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        post_linq(message_received(sender="+16505550077", line=line.phone, text="END"))
    assert run_queued(queued, queue.CONSENT_CONFIRM) == [False]  # nobody to record a send for
    assert not linq.sends()
    TextingProfileFactory(user=cast.member, phone="+16505550077", number=line, chat_id="c7")
    assert services.user_message_send(user=cast.member, body="hi")["status"] == "refused"


def test_keyword_with_a_photo_or_in_a_sentence_goes_to_the_agent(cast, linq, texter, line, queued,
                                                                django_capture_on_commit_callbacks):
    media = [{"type": "media", "id": "a1", "filename": "stop-sign.jpg", "mime_type": "image/jpeg", "size_bytes": 3,
              "url": linq.url + "/media/stop-sign.jpg"}]
    with django_capture_on_commit_callbacks(execute=True):
        post_linq(message_received(sender=texter.phone, line=line.phone, text="stop", media=media, chat_id="c1"))
        post_linq(message_received(sender=texter.phone, line=line.phone, text="stop the 3pm meeting", chat_id="c1"))
    assert not OptOut.objects.exists()
    assert InboundMessage.objects.filter(conversation__isnull=False).count() == 2


def test_opt_out_page_shows_support_who_and_when_without_bodies(cast, linq, texter, line, queued,
                                                               django_capture_on_commit_callbacks,
                                                               django_assert_max_num_queries):
    with django_capture_on_commit_callbacks(execute=True):
        post_linq(message_received(sender=texter.phone, line=line.phone, text="STOP", chat_id="c1"))
    for i in range(5):
        OptOut.objects.create(phone=f"+1650555990{i}", channel="sms", keyword="STOP")
    support = client_for(cast.support)
    with django_assert_max_num_queries(8):
        page = support.get("/channels/health/opt-outs/")
    assert page.status_code == 200
    html = page.content.decode()
    row = html.split(f'data-phone="{texter.phone}"')[1].split("</tr>")[0]
    assert cast.member.email in row and "iMessage" in row and "STOP" in row and 'Opted out' in row
    assert html.count("<tr data-phone=") == 6
    for user in (cast.member, cast.admin):
        assert client_for(user).get("/channels/health/opt-outs/").status_code == 404
