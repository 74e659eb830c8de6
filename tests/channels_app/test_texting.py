"""iMessage and SMS: signed webhooks, de-duplication, debounce claims, sends with fallback,
caps, sticky numbers, users-text-first."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from channels_app import services
from channels_app.models import (
    Channel,
    Conversation,
    InboundBundle,
    InboundMessage,
    NumberDay,
    OutboundMessage,
    TextingProfile,
    WebhookEvent,
)
from channels_app.services import DebounceOutcome, DebounceStatus
from tests.channels_app import recorder
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.fakes import linq as linq_fake
from tests.fakes import twilio_api
from tests.fakes.linq import FakeLinq, message_received, reaction_added, signed
from tests.fakes.twilio_api import FakeTwilio, inbound_params
from tests.seams import replaced

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
def handler():
    recorder.CALLS.clear()
    with replaced(inbound_handler=recorder.record_in_process):
        yield recorder.CALLS


@pytest.fixture
def line(db):
    return SendingNumberFactory(phone="+14155550100", daily_cap=3)


@pytest.fixture
def sms_line(db):
    return SendingNumberFactory(phone="+14155550199", kind=Channel.SMS, daily_cap=100)


def post_linq(payload, **kwargs):
    body, headers = signed(payload, **kwargs)
    return Client().post(IMESSAGE_URL, body, content_type="application/json", **headers)


def post_twilio(params, *, url="http://testserver" + SMS_URL, token=twilio_api.AUTH_TOKEN):
    sig = twilio_api.signature(url, params, token)
    return Client().post(SMS_URL, params, HTTP_X_TWILIO_SIGNATURE=sig)


def close_window(conversation):
    Conversation.objects.filter(pk=conversation.pk).update(deadline=timezone.now() - timedelta(seconds=1))


# --- Inbound webhooks ------------------------------------------------------------------------

def test_imessage_inbound_is_stored_and_opens_the_thread(cast, linq, line):
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", first_texted_at=None, number=None)
    response = post_linq(message_received(sender="+16505550001", line=line.phone, text="hey", chat_id="chat-9"))
    assert response.status_code == 200
    message = InboundMessage.objects.get()
    assert (message.text, message.channel, message.profile, message.number) == ("hey", "imessage", profile, line)
    profile.refresh_from_db()
    assert profile.first_texted_at is not None
    assert profile.number == line  # the line they texted is theirs
    assert profile.chat_id == "chat-9" and profile.imessage_capable is True
    conversation = Conversation.objects.get(profile=profile)
    assert conversation.deadline > timezone.now()
    assert NumberDay.objects.get(number=line).received == 1


def test_duplicate_event_id_is_processed_once(cast, linq, line):
    TextingProfileFactory(user=cast.member, phone="+16505550001")
    payload = message_received(sender="+16505550001", line=line.phone, text="hi", event_id="evt-1")
    assert post_linq(payload).json() == {"status": "stored"}
    assert post_linq(payload).json() == {"status": "duplicate"}
    assert InboundMessage.objects.count() == 1
    assert NumberDay.objects.get(number=line).received == 1


@pytest.mark.parametrize("tamper", ["secret", "stale", "body", "missing"])
def test_bad_imessage_signatures_get_401_and_change_nothing(cast, linq, line, tamper):
    TextingProfileFactory(user=cast.member, phone="+16505550001")
    payload = message_received(sender="+16505550001", line=line.phone, text="hi")
    if tamper == "secret":
        body, headers = signed(payload, secret="wrong")
    elif tamper == "stale":
        body, headers = signed(payload, timestamp=int(time.time()) - 301)
    elif tamper == "body":
        body, headers = signed(payload)
        body = body.replace(b"hi", b"yo")
    else:
        body, headers = signed(payload)
        headers = {}
    response = Client().post(IMESSAGE_URL, body, content_type="application/json", **headers)
    assert response.status_code == 401
    assert not InboundMessage.objects.exists() and not WebhookEvent.objects.exists()


def test_imessage_webhook_rejects_everything_without_a_secret(cast, line):
    with override_settings(LINQ_WEBHOOK_SECRET=""):
        body, headers = signed(message_received(sender="+16505550001", line=line.phone, text="hi"), secret="")
        assert Client().post(IMESSAGE_URL, body, content_type="application/json", **headers).status_code == 401
    assert not InboundMessage.objects.exists()


def test_malformed_imessage_bodies_get_400(linq, db):
    body = b"{not json"
    ts = str(int(time.time()))
    headers = {"HTTP_X_WEBHOOK_TIMESTAMP": ts, "HTTP_X_WEBHOOK_SIGNATURE": linq_fake.sign(body, ts)}
    assert Client().post(IMESSAGE_URL, body, content_type="application/json", **headers).status_code == 400
    body2, headers2 = signed({"event_type": "message.received"})  # no event_id
    assert Client().post(IMESSAGE_URL, body2, content_type="application/json", **headers2).status_code == 400
    body3, headers3 = signed([1, 2])
    assert Client().post(IMESSAGE_URL, body3, content_type="application/json", **headers3).status_code == 400
    assert not InboundMessage.objects.exists()


def test_sms_inbound_with_twilio_signature(cast, twilio, sms_line):
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", first_texted_at=None)
    params = inbound_params(sender="+16505550001", to=sms_line.phone, body="are you there?")
    response = post_twilio(params)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/xml")
    message = InboundMessage.objects.get()
    assert (message.channel, message.text) == ("sms", "are you there?")
    profile.refresh_from_db()
    assert profile.first_texted_at is not None and profile.sms_number == sms_line
    assert post_twilio(params).status_code == 200  # Twilio retry
    assert InboundMessage.objects.count() == 1


def test_bad_twilio_signatures_get_401(cast, twilio, sms_line):
    TextingProfileFactory(user=cast.member, phone="+16505550001")
    params = inbound_params(sender="+16505550001", to=sms_line.phone, body="hi")
    assert post_twilio(params, token="wrong-token").status_code == 401
    assert post_twilio(params, url="http://evil.example/channels/sms/webhook").status_code == 401
    assert Client().post(SMS_URL, params).status_code == 401
    sig = twilio_api.signature("http://testserver" + SMS_URL, params)
    tampered = dict(params, Body="send money")
    assert Client().post(SMS_URL, tampered, HTTP_X_TWILIO_SIGNATURE=sig).status_code == 401
    with override_settings(TWILIO_AUTH_TOKEN=""):
        assert post_twilio(params).status_code == 401
    assert not InboundMessage.objects.exists()


# --- Debounce claims -------------------------------------------------------------------------

def test_window_reset_then_one_bundle_in_order_with_reactions_and_images(cast, linq, line, handler):
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    media = [{"type": "media", "id": "att-1", "filename": "plans.jpg", "mime_type": "image/jpeg",
              "size_bytes": 10, "url": linq.url + "/media/plans.jpg"}]
    post_linq(message_received(sender=profile.phone, line=line.phone, text="hey", chat_id="c1"))
    post_linq(message_received(sender=profile.phone, line=line.phone, text="what's my day", chat_id="c1", media=media))
    post_linq(reaction_added(sender=profile.phone, chat_id="c1", reaction_type="love"))
    conversation = Conversation.objects.get(profile=profile)
    assert conversation.version == 3

    outcome = services.debounce_fire(conversation_id=conversation.pk)
    assert outcome.status == DebounceStatus.WAIT and 0 < outcome.recheck_in <= 3
    assert outcome.dispatch_bundle_id is None
    # The first message's check is superseded by the third's; the third's waits for the deadline.
    superseded = services.debounce_fire(conversation_id=conversation.pk, version=1)
    assert superseded == DebounceOutcome(DebounceStatus.SUPERSEDED) and superseded.recheck_in is None
    assert services.debounce_fire(conversation_id=conversation.pk, version=3).status == DebounceStatus.WAIT

    close_window(conversation)
    outcome = services.debounce_fire(conversation_id=conversation.pk)
    assert outcome.status == DebounceStatus.DISPATCH and outcome.recheck_in is None
    bundle_id = outcome.dispatch_bundle_id
    assert services.debounce_fire(conversation_id=conversation.pk) == DebounceOutcome(DebounceStatus.NOTHING)
    assert services.bundle_dispatch(bundle_id=bundle_id) == "dispatched"
    assert services.bundle_dispatch(bundle_id=bundle_id) == "already"  # never twice

    assert len(handler) == 1
    call = handler[0]
    assert call["user"] == cast.member and call["channel"] == "imessage"
    assert call["conversation_ref"] == "imessage:c1"
    assert [m["text"] for m in call["messages"]] == ["hey", "what's my day", ""]
    assert call["messages"][1]["attachments"][0]["filename"] == "plans.jpg"
    assert call["messages"][2]["reaction"]["type"] == "love"
    # The typing bubble starts when the bundle goes to the agent; the agent runs inside the dispatch,
    # so one that sent no reply does not leave it on.
    assert [r.path for r in linq.typing("POST")] == ["/v3/chats/c1/typing"]
    assert [r.path for r in linq.typing("DELETE")] == ["/v3/chats/c1/typing"]
    assert Conversation.objects.get(pk=conversation.pk).typing_since is None


def test_failed_dispatch_is_retried_not_lost(cast, linq, line):
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    post_linq(message_received(sender=profile.phone, line=line.phone, text="hello"))
    conversation = Conversation.objects.get(profile=profile)
    close_window(conversation)
    bundle_id = services.debounce_fire(conversation_id=conversation.pk).bundle_id
    with replaced(inbound_handler=recorder.failing), pytest.raises(RuntimeError):
        services.bundle_dispatch(bundle_id=bundle_id)
    assert InboundBundle.objects.get(pk=bundle_id).status == InboundBundle.Status.CLAIMED
    recorder.CALLS.clear()
    with replaced(inbound_handler=recorder.record_in_process):
        assert services.bundle_dispatch(bundle_id=bundle_id) == "dispatched"
    assert [m["text"] for m in recorder.CALLS[0]["messages"]] == ["hello"]


def _claimed_bundle(profile, line, text="what's free today?"):
    post_linq(message_received(sender=profile.phone, line=line.phone, text=text, chat_id="c1"))
    conversation = Conversation.objects.get(profile=profile)
    close_window(conversation)
    outcome = services.debounce_fire(conversation_id=conversation.pk)
    assert outcome.status == DebounceStatus.DISPATCH
    return outcome.bundle_id


def test_the_hand_over_reaches_the_agent_in_five_statements(cast, linq, line):
    """Between taking the bundle and calling the agent: the claim (which also marks where the
    agent's traces would start), the bundle, its messages and their attachments, the typing bubble."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from lindy.models import TaskEvent

    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1")
    bundle_id = _claimed_bundle(profile, line)
    recorder.CALLS.clear()
    connection.queries_log.clear()
    with replaced(inbound_handler=recorder.record_statements_so_far), \
            CaptureQueriesContext(connection):
        assert services.bundle_dispatch(bundle_id=bundle_id) == "dispatched"
    (call,) = recorder.CALLS
    assert call["statements"] <= 5 and [m["text"] for m in call["messages"]] == ["what's free today?"]
    bundle = InboundBundle.objects.get(pk=bundle_id)
    assert bundle.handed_over_at and bundle.task_event_mark == (
        TaskEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0)
    assert [r.path for r in linq.typing("POST")] == ["/v3/chats/c1/typing"]


def test_agent_that_replied_then_failed_is_never_run_again(cast, linq, twilio, line):
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1",
                                    imessage_capable=True, capability_checked_at=timezone.now())
    bundle_id = _claimed_bundle(profile, line)
    recorder.CALLS.clear()
    with replaced(inbound_handler=recorder.replies_then_fails):
        assert services.bundle_dispatch(bundle_id=bundle_id) == "failed"  # no exception: nothing to retry
        bundle = InboundBundle.objects.get(pk=bundle_id)
        assert bundle.status == InboundBundle.Status.FAILED and "crashed after replying" in bundle.error
        # A Celery retry, a redelivery or the sweep, now or long after: none reaches the agent again.
        assert services.bundle_dispatch(bundle_id=bundle_id) == "already"
        InboundBundle.objects.filter(pk=bundle_id).update(heartbeat_at=timezone.now() - timedelta(hours=2))
        assert services.debounce_recover()["bundles"] == 0
    assert len(recorder.CALLS) == 1
    assert len(linq.sends()) == 1
    assert Conversation.objects.get(profile=profile).typing_since is None


def test_dispatch_task_does_not_retry_an_agent_that_had_started(cast, linq, twilio, line):
    from channels_app import tasks

    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1",
                                    imessage_capable=True, capability_checked_at=timezone.now())
    bundle_id = _claimed_bundle(profile, line)
    recorder.CALLS.clear()
    with replaced(inbound_handler=recorder.replies_then_fails):
        assert tasks.bundle_dispatch.apply(args=(bundle_id,)).get() == "failed"
    assert len(recorder.CALLS) == 1 and len(linq.sends()) == 1


def test_dispatch_task_retries_a_hand_over_that_failed_before_the_agent_acted(cast, linq, line):
    from channels_app import tasks

    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    bundle_id = _claimed_bundle(profile, line)
    with replaced(inbound_handler=recorder.failing):
        result = tasks.bundle_dispatch.apply(args=(bundle_id,))  # eager: every retry runs in place
    assert isinstance(result.result, RuntimeError)
    bundle = InboundBundle.objects.get(pk=bundle_id)
    assert bundle.attempts == tasks.bundle_dispatch.max_retries + 1
    assert bundle.status == InboundBundle.Status.FAILED and bundle.handed_over_at is None


def test_agent_past_its_soft_time_limit_is_not_run_again(cast, linq, line):
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1")
    bundle_id = _claimed_bundle(profile, line)
    recorder.CALLS.clear()
    with replaced(inbound_handler=recorder.acts_then_runs_out_of_time):
        assert services.bundle_dispatch(bundle_id=bundle_id) == "failed"
        assert services.debounce_recover()["bundles"] == 0
    assert InboundBundle.objects.get(pk=bundle_id).status == InboundBundle.Status.FAILED
    assert len(recorder.CALLS) == 1


def _dispatching(bundle_id, *, age_seconds, handed_over=True, mark=None, beat_seconds=None):
    now = timezone.now()
    from lindy.models import TaskEvent

    beat = age_seconds if beat_seconds is None else beat_seconds
    InboundBundle.objects.filter(pk=bundle_id).update(
        status=InboundBundle.Status.DISPATCHING, heartbeat_at=now - timedelta(seconds=beat), attempts=1,
        handed_over_at=(now - timedelta(seconds=age_seconds)) if handed_over else None,
        task_event_mark=(TaskEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) if mark is None
        else mark,
    )


def test_sweep_never_takes_a_slow_live_run_for_dead(cast, linq, line):
    from channels_app import tasks
    from channels_app.services.dispatch import dispatch_lease_seconds

    # Even a lease configured shorter than the task's hard time limit is stretched past it.
    with override_settings(CHANNELS_DISPATCH_LEASE_SECONDS=10):
        assert dispatch_lease_seconds() > tasks.bundle_dispatch.time_limit
        profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
        bundle_id = _claimed_bundle(profile, line)
        # The agent is still thinking, nearly at the time limit, and its thread still beats.
        _dispatching(bundle_id, age_seconds=tasks.bundle_dispatch.time_limit - 1, beat_seconds=2)
        assert services.debounce_recover() == {"conversations": 0, "bundles": 0, "failed": 0}
    assert InboundBundle.objects.get(pk=bundle_id).status == InboundBundle.Status.DISPATCHING


def test_sweep_hands_a_dead_hand_over_again_so_the_agent_resumes_it(cast, linq, twilio, line, handler,
                                                                    monkeypatch):
    from channels_app import tasks
    from channels_app.services.dispatch import MAX_DISPATCH_ATTEMPTS
    from lindy import services as lindy_services

    monkeypatch.setattr(tasks.bundle_dispatch, "apply_async",
                        lambda args, countdown=None: services.bundle_dispatch(bundle_id=args[0]))

    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1")
    bundle_id = _claimed_bundle(profile, line)
    _dispatching(bundle_id, age_seconds=3600)  # killed right after the hand-over, before the agent wrote anything
    assert services.debounce_recover() == {"conversations": 0, "bundles": 1, "failed": 0}
    bundle = InboundBundle.objects.get(pk=bundle_id)
    assert bundle.status == InboundBundle.Status.DISPATCHED and len(handler) == 1  # dispatched again

    # Killed after the handler recorded the user's texts on their task, before the agent acted:
    # the texts are no action (the agent's handler records each once), so it is handed over again.
    recorded = _claimed_bundle(profile, line, text="and the day after?")
    _dispatching(recorded, age_seconds=3600)
    task = lindy_services.task_create(team=cast.team, owner=cast.member, title="t")
    lindy_services.task_event_add(task=task, actor="user", content="and the day after?")
    assert services.debounce_recover() == {"conversations": 0, "bundles": 1, "failed": 0}
    assert InboundBundle.objects.get(pk=recorded).status == InboundBundle.Status.DISPATCHED and len(handler) == 2

    # Killed after the agent had begun: handed over again all the same, for the agent resumes from
    # its last recorded step (tests/agent/test_loop.py: a proposed action runs once, nothing twice).
    other = _claimed_bundle(profile, line, text="and tomorrow?")
    _dispatching(other, age_seconds=3600)
    lindy_services.task_event_add(task=task, actor="assistant", content="Checking.")  # the agent had begun
    assert services.debounce_recover() == {"conversations": 0, "bundles": 1, "failed": 0}
    assert InboundBundle.objects.get(pk=other).status == InboundBundle.Status.DISPATCHED
    assert len(handler) == 3

    # Within the attempt cap only: a bundle that keeps killing its workers is left for a person.
    capped = _claimed_bundle(profile, line, text="and next week?")
    _dispatching(capped, age_seconds=3600)
    InboundBundle.objects.filter(pk=capped).update(attempts=MAX_DISPATCH_ATTEMPTS)
    assert services.debounce_recover() == {"conversations": 0, "bundles": 0, "failed": 1}
    assert InboundBundle.objects.get(pk=capped).status == InboundBundle.Status.FAILED
    assert len(handler) == 3


def test_sweep_takes_over_a_hand_over_whose_heartbeat_stopped_without_waiting_for_the_lease(
        cast, linq, twilio, line, handler, monkeypatch):
    from channels_app import tasks
    from channels_app.services.dispatch import DISPATCH_STALE_SECONDS

    monkeypatch.setattr(tasks.bundle_dispatch, "apply_async",
                        lambda args, countdown=None: services.bundle_dispatch(bundle_id=args[0]))
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1")
    bundle_id = _claimed_bundle(profile, line)
    _dispatching(bundle_id, age_seconds=60)  # well inside the 11-minute lease
    now = timezone.now()
    # Beating: a live run, however long it has been going, is left alone.
    InboundBundle.objects.filter(pk=bundle_id).update(heartbeat_at=now - timedelta(seconds=2))
    assert services.debounce_recover() == {"conversations": 0, "bundles": 0, "failed": 0}
    assert len(handler) == 0
    # Its worker was killed whole: the beat stopped, and after the stale window the sweep hands it over again.
    InboundBundle.objects.filter(pk=bundle_id).update(heartbeat_at=now - timedelta(seconds=DISPATCH_STALE_SECONDS + 1))
    assert services.debounce_recover() == {"conversations": 0, "bundles": 1, "failed": 0}
    bundle = InboundBundle.objects.get(pk=bundle_id)
    assert bundle.status == InboundBundle.Status.DISPATCHED and len(handler) == 1


def test_messages_that_arrive_while_the_agent_runs_go_next_not_alongside(cast, linq, line, handler, monkeypatch):
    from channels_app import tasks
    from channels_app.services.dispatch import MAX_DISPATCH_ATTEMPTS

    queued = []
    monkeypatch.setattr(tasks.debounce_fire, "apply_async", lambda args, countdown=None: queued.append(args))
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    first = _claimed_bundle(profile, line, text="what's my day?")
    conversation = Conversation.objects.get(profile=profile)
    post_linq(message_received(sender=profile.phone, line=line.phone, text="also the weather", chat_id="c1"))
    close_window(conversation)
    # A second run now would read "what's my day?" unanswered and might answer it again.
    assert services.debounce_fire(conversation_id=conversation.pk) == DebounceOutcome(DebounceStatus.BUSY)

    queued.clear()
    assert services.bundle_dispatch(bundle_id=first) == "dispatched"
    assert queued and queued[0][0] == conversation.pk  # the next bundle is fired when the run ends
    outcome = services.debounce_fire(conversation_id=conversation.pk)
    assert outcome.status == DebounceStatus.DISPATCH
    second = outcome.bundle_id
    assert services.bundle_dispatch(bundle_id=second) == "dispatched"
    assert [[m["text"] for m in call["messages"]] for call in handler] == [["what's my day?"], ["also the weather"]]

    # A bundle nobody will dispatch again (out of attempts) does not hold the conversation up.
    post_linq(message_received(sender=profile.phone, line=line.phone, text="hello?", chat_id="c1"))
    InboundBundle.objects.filter(pk=second).update(status=InboundBundle.Status.CLAIMED, attempts=MAX_DISPATCH_ATTEMPTS)
    close_window(conversation)
    assert services.debounce_fire(conversation_id=conversation.pk).status == DebounceStatus.DISPATCH


def test_attachments_are_copied_from_the_expiring_url(cast, linq, line, tmp_path):
    from tests.fakes.http import Reply

    linq.default("GET", "/media/plans.jpg", Reply(200, b"\xff\xd8jpegbytes"))
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    media = [{"type": "media", "id": "att-1", "filename": "plans.jpg", "mime_type": "image/jpeg",
              "size_bytes": 11, "url": linq.url + "/media/plans.jpg"}]
    post_linq(message_received(sender=profile.phone, line=line.phone, media=media))
    attachment = InboundMessage.objects.get().attachments.get()
    with override_settings(CHANNELS_MEDIA_ROOT=tmp_path):
        assert services.attachment_store(attachment_id=attachment.pk) is True
        assert services.attachment_store(attachment_id=attachment.pk) is False
    attachment.refresh_from_db()
    assert (tmp_path / attachment.stored_path).read_bytes() == b"\xff\xd8jpegbytes"


def test_unknown_sender_is_stored_but_not_dispatched(linq, line, handler):
    post_linq(message_received(sender="+19995550000", line=line.phone, text="who is this"))
    message = InboundMessage.objects.get()
    assert message.profile is None and message.conversation is None
    assert services.debounce_recover() == {"conversations": 0, "bundles": 0, "failed": 0}


# --- Sending -----------------------------------------------------------------------------------

def test_user_who_never_texted_is_refused(cast, linq, twilio, line):
    TextingProfileFactory(user=cast.member, number=line, first_texted_at=None)
    result = services.user_message_send(user=cast.member, body="Hi! I'm Lindy.")
    assert result["status"] == "refused" and not result["sent"]
    result2 = services.user_message_send(user=cast.admin, body="Hello")  # no phone at all
    assert result2["status"] == "refused"
    assert not linq.sends() and not twilio.sends()
    assert OutboundMessage.objects.filter(status="refused").count() == 2


def test_reply_goes_by_imessage_and_stops_typing(cast, linq, twilio, line):
    profile = TextingProfileFactory(user=cast.member, number=line, chat_id="c1", imessage_capable=True,
                                    capability_checked_at=timezone.now())
    Conversation.objects.create(profile=profile, typing_since=timezone.now())
    result = services.user_message_send(user=cast.member, body="Your day: 3 meetings.")
    assert result["sent"] and result["channel"] == "imessage" and result["fallback"] == ""
    assert linq.sends()[0].path == "/v3/chats/c1/messages"
    assert linq.sends()[0].json["message"]["parts"] == [{"type": "text", "value": "Your day: 3 meetings."}]
    assert linq.typing("DELETE")
    assert Conversation.objects.get(profile=profile).typing_since is None
    assert NumberDay.objects.get(number=line).sent == 1
    assert not twilio.sends()


def test_first_reply_creates_the_chat(cast, linq, twilio, line):
    linq.imessage_capable.add("+16505550001")
    TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    result = services.user_message_send(user=cast.member, body="Hello back")
    assert result["sent"] and result["channel"] == "imessage"
    request = linq.requests_to("POST", "/v3/chats")[0]
    assert request.json["from"] == line.phone and request.json["to"] == ["+16505550001"]
    assert TextingProfile.objects.get(user=cast.member).chat_id


def test_imessage_failure_falls_back_to_sms_and_is_recorded(cast, linq, twilio, line, sms_line):
    linq.fail_sends = True
    TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1", imessage_capable=True,
                          capability_checked_at=timezone.now())
    result = services.user_message_send(user=cast.member, body="Fallback please")
    assert result["sent"] and result["channel"] == "sms" and result["fallback"] == "imessage_failed"
    form = twilio.sends()[0].form
    assert (form["To"], form["From"], form["Body"]) == ("+16505550001", sms_line.phone, "Fallback please")
    day = NumberDay.objects.get(number=line)
    assert (day.sent, day.fallbacks) == (0, 1)  # the reserved iMessage slot was given back
    assert NumberDay.objects.get(number=sms_line).sent == 1


def test_non_imessage_handset_goes_by_sms(cast, linq, twilio, line, sms_line):
    TextingProfileFactory(user=cast.member, phone="+16505550002", number=line)  # capability unknown: checked
    result = services.user_message_send(user=cast.member, body="Hi Android")
    assert result["channel"] == "sms" and result["fallback"] == "not_imessage"
    assert linq.requests_to("POST", "/v3/capability/check_imessage")
    assert not linq.sends()
    services.user_message_send(user=cast.member, body="Again")
    assert len(linq.requests_to("POST", "/v3/capability/check_imessage")) == 1  # answer cached


def test_capped_number_sends_nothing_more_and_falls_back(cast, linq, twilio, line, sms_line):
    TextingProfileFactory(user=cast.member, number=line, chat_id="c1", imessage_capable=True,
                          capability_checked_at=timezone.now())
    results = [services.user_message_send(user=cast.member, body=f"msg {i}") for i in range(5)]
    assert [r["channel"] for r in results] == ["imessage"] * 3 + ["sms"] * 2
    assert [r["fallback"] for r in results[3:]] == ["cap", "cap"]
    assert len(linq.sends()) == 3
    day = NumberDay.objects.get(number=line)
    assert (day.sent, day.capped, day.fallbacks) == (3, 2, 2)
    assert OutboundMessage.objects.filter(fallback_reason="cap", status="sent").count() == 2


def test_no_fallback_line_left_is_recorded_as_failed(cast, linq, twilio, line):
    TextingProfileFactory(user=cast.member, number=line, chat_id="c1", imessage_capable=True,
                          capability_checked_at=timezone.now())
    linq.fail_sends = True
    result = services.user_message_send(user=cast.member, body="nowhere to go")
    assert result["status"] == "failed" and not result["sent"]
    assert OutboundMessage.objects.get().status == "failed"


def test_sms_requested_explicitly(cast, linq, twilio, line, sms_line):
    TextingProfileFactory(user=cast.member, number=line, chat_id="c1", imessage_capable=True,
                          capability_checked_at=timezone.now())
    result = services.user_message_send(user=cast.member, body="by sms", channel="sms")
    assert result["channel"] == "sms" and result["fallback"] == "requested"
    assert not NumberDay.objects.filter(number=line, fallbacks__gt=0).exists()
    with pytest.raises(ValueError):
        services.user_message_send(user=cast.member, body="x", channel="fax")
    with pytest.raises(ValueError):
        services.user_message_send(user=cast.member, body="   ")


# --- Pool --------------------------------------------------------------------------------------

def test_new_users_get_the_healthiest_line_and_keep_the_one_they_text(cast, db):
    busy = SendingNumberFactory(daily_cap=100)
    calm = SendingNumberFactory(daily_cap=100)
    spammy = SendingNumberFactory(daily_cap=100)
    services.stat_add(number=busy, field="sent", amount=80)
    services.stat_add(number=busy, field="received", amount=80)
    services.stat_add(number=spammy, field="sent", amount=5, day=timezone.localdate() - timedelta(days=1))
    services.stat_add(number=calm, field="received", amount=10, day=timezone.localdate() - timedelta(days=1))
    services.stat_add(number=calm, field="sent", amount=10, day=timezone.localdate() - timedelta(days=1))
    assert services.healthiest_number() == calm

    profile = services.profile_register(user=cast.member, phone="(650) 555-0123")
    assert profile.phone == "+16505550123" and profile.number == calm
    # They text another line first: that line is theirs from now on.
    services.inbound_store(channel="imessage", provider_id="e1", from_phone="+16505550123", to_phone=spammy.phone,
                           text="hi")
    profile.refresh_from_db()
    assert profile.number == spammy
    services.inbound_store(channel="imessage", provider_id="e2", from_phone="+16505550123", to_phone=busy.phone,
                           text="hi again")
    profile.refresh_from_db()
    assert profile.number == spammy  # sticky


def test_phone_validation(cast):
    with pytest.raises(ValueError):
        services.profile_register(user=cast.member, phone="call me")
    services.profile_register(user=cast.member, phone="+44 20 7946 0958")
    with pytest.raises(ValueError):
        services.profile_register(user=cast.admin, phone="+442079460958")  # someone else's


def test_delivery_failure_reported_later_is_resent_by_sms_once(cast, linq, twilio, line, sms_line):
    TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="c1", imessage_capable=True,
                          capability_checked_at=timezone.now())
    first = services.user_message_send(user=cast.member, body="Did this arrive?")
    provider_id = OutboundMessage.objects.get(pk=first["outbound_id"]).provider_id
    failed = {"api_version": "v3", "event_type": "message.failed", "event_id": "evt-f1", "created_at": "2026-11-29T12:00:00Z",
              "partner_id": "p", "trace_id": "t", "webhook_version": "2026-02-03",
              "data": {"code": 3007, "failed_at": "2026-11-29T12:00:02Z", "chat_id": "c1", "message_id": provider_id,
                       "reason": "Recipient is not registered with iMessage"}}
    assert post_linq(failed).json() == {"status": "recorded"}
    failed["event_id"] = "evt-f2"  # the provider reporting it again under a new id
    post_linq(failed)
    assert OutboundMessage.objects.get(pk=first["outbound_id"]).status == "failed"
    resent = OutboundMessage.objects.get(channel="sms")
    assert (resent.status, resent.fallback_reason, resent.body) == ("sent", "imessage_failed", "Did this arrive?")
    assert len(twilio.sends()) == 1
    assert NumberDay.objects.get(number=line).fallbacks == 1


def test_oversized_webhook_bodies_are_rejected(cast, linq, line):
    TextingProfileFactory(user=cast.member, phone="+16505550001")
    payload = message_received(sender="+16505550001", line=line.phone, text="x" * 5000)
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1024):
        response = post_linq(payload)
    assert response.status_code == 413
    assert not InboundMessage.objects.exists()


def test_signed_but_malformed_event_changes_nothing(cast, linq, line):
    TextingProfileFactory(user=cast.member, phone="+16505550001")
    payload = message_received(sender="+16505550001", line=line.phone, text="hi", event_id="evt-bad")
    payload["data"]["sender_handle"] = "not an object"
    assert post_linq(payload).status_code == 400
    media = message_received(sender="+16505550001", line=line.phone, event_id="evt-bad2",
                             media=[{"type": "media", "id": "a", "filename": "x.jpg", "size_bytes": "lots", "url": "u"}])
    assert post_linq(media).status_code == 400
    assert not WebhookEvent.objects.exists() and not InboundMessage.objects.exists()
    assert not NumberDay.objects.exists()


def test_reconciled_late_messages_are_kept_but_not_answered(cast, linq, line):
    TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    payload = message_received(sender="+16505550001", line=line.phone, text="from two hours ago")
    payload["data"]["reconciled_at"] = "2026-11-29T14:00:00Z"
    assert post_linq(payload).json() == {"status": "stored"}
    message = InboundMessage.objects.get()
    assert message.text == "from two hours ago" and message.conversation is None
    assert not Conversation.objects.exists()
