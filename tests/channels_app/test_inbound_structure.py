"""Inbound texts, piece by piece: provider payloads parsed into typed events, the debounce
decision as a dataclass, tasks queued by name (no service imports the tasks module)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest
from celery import current_app
from django.test import override_settings
from django.utils import timezone

import channels_app
from channels_app import services
from channels_app.models import Channel, Conversation, InboundMessage, WebhookEvent
from channels_app.providers import linq, sms
from channels_app.providers.events import (
    Attachment,
    DeliveryFailed,
    Ignored,
    InboundEvent,
    MalformedEvent,
    Reaction,
    Webhook,
)
from channels_app.services import DebounceOutcome, DebounceStatus, queue
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.fakes.linq import message_received, reaction_added
from tests.fakes.twilio_api import inbound_params
from tests.imports import imports_of, offending_imports

SERVICES = Path(channels_app.__file__).resolve().parent / "services"


# --- Linq (iMessage) payloads ------------------------------------------------------------------

def test_linq_message_received_is_a_typed_inbound_event():
    media = [{"type": "media", "id": "att-1", "filename": "plans.jpg", "mime_type": "image/jpeg",
              "size_bytes": 10, "url": "https://cdn.example/plans.jpg"}]
    payload = message_received(sender="+16505550001", line="+14155550100", text="hey", chat_id="c1",
                               event_id="evt-1", media=media)
    webhook = linq.webhook_parse(payload)
    assert webhook == Webhook(source="linq", event_id="evt-1", event_type="message.received", event=InboundEvent(
        channel=Channel.IMESSAGE, provider_id="evt-1", from_phone="+16505550001", to_phone="+14155550100",
        text="hey", attachments=(Attachment(id="att-1", filename="plans.jpg", mime_type="image/jpeg", size_bytes=10,
                                            url="https://cdn.example/plans.jpg"),),
        chat_id="c1",
    ))
    assert dataclasses.is_dataclass(webhook.event)


def test_linq_sms_fallback_and_reconciled_history():
    payload = message_received(sender="+16505550001", line="+14155550100", text="hi", service="SMS")
    payload["data"]["reconciled_at"] = "2026-11-29T12:05:00Z"
    event = linq.webhook_parse(payload).event
    assert event.channel == Channel.SMS and event.history is True


def test_linq_text_and_link_parts_are_joined():
    payload = message_received(sender="+16505550001", line="+14155550100", text="look")
    payload["data"]["parts"].append({"type": "link", "value": "https://example.com"})
    assert linq.webhook_parse(payload).event.text == "look\nhttps://example.com"


def test_linq_reaction_names_no_line():
    payload = reaction_added(sender="+16505550001", chat_id="c1", reaction_type="love", message_id="m-9",
                             event_id="evt-2")
    event = linq.webhook_parse(payload).event
    assert event == InboundEvent(
        channel=Channel.IMESSAGE, provider_id="evt-2", from_phone="+16505550001", to_phone="",
        reaction=Reaction(type="love", emoji="", message_id="m-9"), chat_id="c1",
    )


def test_linq_delivery_failure_and_ignored_events():
    failed = {"event_id": "evt-3", "event_type": "message.failed", "data": {"message_id": "m-1", "code": "E42"}}
    assert linq.webhook_parse(failed).event == DeliveryFailed(message_id="m-1", reason="delivery failed: E42")
    outbound = message_received(sender="+16505550001", line="+14155550100", text="hi")
    outbound["data"]["direction"] = "outbound"
    group = message_received(sender="+16505550001", line="+14155550100", text="hi")
    group["data"]["chat"]["is_group"] = True
    mine = reaction_added(sender="+16505550001")
    mine["data"]["is_from_me"] = True
    unknown = {"event_id": "evt-4", "event_type": "chat.typing_indicator.started", "data": {}}
    for payload in (outbound, group, mine, unknown):
        webhook = linq.webhook_parse(payload)
        assert isinstance(webhook.event, Ignored), payload
        assert webhook.event_id  # still claimed by id: a retry is a duplicate


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda p: p.pop("event_id"), "event_id and data are required"),
    (lambda p: p.update(data=["not", "an", "object"]), "event_id and data are required"),
    (lambda p: p["data"].update(chat="c1"), "data.chat must be an object"),
    (lambda p: p["data"].update(sender_handle=["+1"]), "data.sender_handle must be an object"),
    (lambda p: p["data"].update(parts="hello"), "data.parts must be a list"),
    (lambda p: p["data"]["parts"].append({"type": "media", "size_bytes": "big"}), "data.parts[1].size_bytes"),
    (lambda p: p["data"]["parts"].append({"type": "text", "value": {"x": 1}}), "data.parts[1].value must be a string"),
])
def test_malformed_linq_payloads_name_what_is_wrong(mutate, message):
    payload = message_received(sender="+16505550001", line="+14155550100", text="hi")
    mutate(payload)
    with pytest.raises(MalformedEvent, match=message.replace("[", r"\[").replace("]", r"\]")):
        linq.webhook_parse(payload)
    assert issubclass(MalformedEvent, ValueError)  # the webhook answers 400


def test_malformed_linq_body_that_is_not_an_object():
    with pytest.raises(MalformedEvent, match="JSON object"):
        linq.webhook_parse([1, 2])


def test_malformed_nested_payload_gets_400_and_changes_nothing(linq_settings):
    from django.test import Client

    from tests.fakes.linq import signed

    payload = message_received(sender="+16505550001", line="+14155550100", text="hi")
    payload["data"]["chat"] = "c1"
    body, headers = signed(payload)
    response = Client().post("/channels/imessage/webhook", body, content_type="application/json", **headers)
    assert response.status_code == 400 and "data.chat must be an object" in response.json()["error"]
    assert not InboundMessage.objects.exists() and not WebhookEvent.objects.exists()


@pytest.fixture
def linq_settings(db):
    from tests.fakes.linq import FakeLinq

    with FakeLinq() as fake, override_settings(**fake.settings()):
        yield fake


# --- Twilio (SMS) payloads ---------------------------------------------------------------------

def test_twilio_params_are_a_typed_inbound_event():
    params = inbound_params(sender="+16505550001", to="+14155550199", body="are you there?", sid="SM1")
    params.update(NumMedia="2", MediaUrl0="https://api.twilio.example/m0", MediaContentType0="image/png")
    webhook = sms.webhook_parse(params)
    assert webhook == Webhook(source="twilio", event_id="SM1", event_type="sms.received", event=InboundEvent(
        channel=Channel.SMS, provider_id="SM1", from_phone="+16505550001", to_phone="+14155550199",
        text="are you there?", attachments=(Attachment(id="SM1-0", filename="media-0", mime_type="image/png",
                                                       size_bytes=0, url="https://api.twilio.example/m0"),),
    ))


def test_twilio_without_a_sid_is_malformed():
    params = inbound_params(sender="+16505550001", to="+14155550199", body="hi")
    params.pop("MessageSid", None)
    params.pop("SmsSid", None)
    with pytest.raises(MalformedEvent, match="MessageSid is required"):
        sms.webhook_parse(params)


def test_twilio_unreadable_media_count_means_no_media():
    params = inbound_params(sender="+16505550001", to="+14155550199", body="hi", sid="SM2")
    params.update(NumMedia="lots", MediaUrl0="https://api.twilio.example/m0")
    assert sms.webhook_parse(params).event.attachments == ()


# --- Services act on typed events ------------------------------------------------------------

def test_a_reaction_is_stored_on_the_senders_line(cast):
    line = SendingNumberFactory(phone="+14155550100")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    payload = reaction_added(sender=profile.phone, chat_id="c1", reaction_type="like", message_id="m-1")
    assert services.linq_event_process(payload=payload) == "stored"
    message = InboundMessage.objects.get()
    assert message.number == line and message.reaction == {"type": "like", "emoji": "", "message_id": "m-1"}
    assert services.linq_event_process(payload=payload) == "duplicate"


# --- The debounce decision ---------------------------------------------------------------------

def test_debounce_outcome_carries_the_re_enqueue_decision():
    wait = DebounceOutcome(DebounceStatus.WAIT, wait_seconds=2.5)
    assert (wait.recheck_in, wait.dispatch_bundle_id) == (2.5, None)
    dispatch = DebounceOutcome(DebounceStatus.DISPATCH, bundle_id=7)
    assert (dispatch.recheck_in, dispatch.dispatch_bundle_id) == (None, 7)
    for status in (DebounceStatus.NOTHING, DebounceStatus.SUPERSEDED, DebounceStatus.BUSY):
        outcome = DebounceOutcome(status)
        assert (outcome.recheck_in, outcome.dispatch_bundle_id) == (None, None)
    assert not isinstance(wait, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        wait.status = DebounceStatus.NOTHING


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr(queue, "task_send", lambda name, *args, countdown=None: calls.append((name, args, countdown)))
    return calls


def test_debounce_check_queues_a_recheck_while_the_window_is_open(cast, sent):
    line = SendingNumberFactory(phone="+14155550100")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    services.inbound_store(channel="imessage", provider_id="e1", from_phone=profile.phone, to_phone=line.phone,
                           text="hi")
    conversation = Conversation.objects.get(profile=profile)
    outcome = services.debounce_check(conversation_id=conversation.pk, version=conversation.version)
    assert outcome.status == DebounceStatus.WAIT
    assert sent == [(queue.DEBOUNCE_FIRE, (conversation.pk, conversation.version), outcome.recheck_in)]


def test_debounce_check_queues_the_dispatch_of_the_claimed_bundle(cast, sent):
    line = SendingNumberFactory(phone="+14155550100")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    services.inbound_store(channel="imessage", provider_id="e1", from_phone=profile.phone, to_phone=line.phone,
                           text="hi")
    conversation = Conversation.objects.get(profile=profile)
    Conversation.objects.filter(pk=conversation.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    outcome = services.debounce_check(conversation_id=conversation.pk)
    assert outcome.status == DebounceStatus.DISPATCH
    assert sent == [(queue.BUNDLE_DISPATCH, (outcome.bundle_id,), None)]
    sent.clear()
    assert services.debounce_check(conversation_id=conversation.pk).status == DebounceStatus.NOTHING
    assert sent == []


def test_the_check_is_due_at_the_deadline_however_long_the_webhook_took(cast, monkeypatch,
                                                                        django_capture_on_commit_callbacks):
    """The window runs from the message's arrival (the deadline on the row), not from the commit of
    the webhook's transaction: a slow transaction (a loaded web process) is not added to the wait."""
    queued = []
    monkeypatch.setattr(queue, "task_send_or_log",
                        lambda name, *args, countdown=None: queued.append((name, args, countdown)))
    line = SendingNumberFactory(phone="+14155550100")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line)
    with django_capture_on_commit_callbacks() as callbacks:
        services.inbound_store(channel="imessage", provider_id="e1", from_phone=profile.phone, to_phone=line.phone,
                               text="hi")
    conversation = Conversation.objects.get(profile=profile)
    # The clock stands still at 0.8 s after now (the commit came late), so a loaded machine's own
    # delays between these lines don't count.
    before_commit = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: before_commit + timedelta(seconds=0.8))
    for callback in callbacks:
        callback()
    [(name, args, countdown)] = queued
    assert (name, args) == (queue.DEBOUNCE_FIRE, (conversation.pk, conversation.version))
    window = (conversation.deadline - before_commit).total_seconds()
    assert countdown == pytest.approx(window - 0.8, abs=0.01) and countdown < 3


def test_debounce_task_returns_the_status_and_queues_through_the_service(cast, sent):
    from channels_app import tasks

    assert tasks.debounce_fire.apply(args=(999_999,)).get() == "nothing"
    assert sent == []


# --- Tasks by name ------------------------------------------------------------------------------

def test_every_task_name_services_send_is_registered():
    names = {queue.DEBOUNCE_FIRE, queue.BUNDLE_DISPATCH, queue.ATTACHMENT_STORE, queue.DEBOUNCE_RECOVER,
             queue.RATIO_ALERTS_CHECK}
    assert names <= set(current_app.tasks)  # registered when the app loads, not by a service's import


def test_task_send_goes_through_the_registered_task(monkeypatch):
    from channels_app import tasks

    calls = []
    monkeypatch.setattr(tasks.attachment_store, "apply_async", lambda args, countdown=None: calls.append((args, countdown)))
    queue.task_send(queue.ATTACHMENT_STORE, 5, countdown=3)
    assert calls == [((5,), 3)]


def test_a_broker_error_is_logged_not_raised_for_stored_work(monkeypatch, caplog):
    from channels_app import tasks

    def down(args, countdown=None):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.attachment_store, "apply_async", down)
    queue.task_send_or_log(queue.ATTACHMENT_STORE, 5)
    assert "recovery sweep" in caplog.text
    with pytest.raises(ConnectionError):
        queue.task_send(queue.ATTACHMENT_STORE, 5)


def test_the_import_scanner_sees_every_spelling():
    source = (
        "from .. import tasks\nfrom ..tasks import x\nimport channels_app.tasks\n"
        "def f():\n    from channels_app import tasks\n    from channels_app.tasks import y\n"
        "    importlib.import_module('channels_app.tasks')\n"
        "from . import queue\n"
    )
    imports = imports_of(source, "channels_app.services")
    hits = [line for line, name in imports if name == "channels_app.tasks" or name.startswith("channels_app.tasks.")]
    assert sorted(set(hits)) == [1, 2, 3, 5, 6, 7]


def test_no_service_imports_the_tasks_module():
    assert {"store.py", "debounce.py", "dispatch.py", "webhooks.py", "queue.py"} <= {p.name for p in SERVICES.glob("*.py")}
    assert offending_imports(SERVICES, "channels_app.services", "channels_app.tasks") == []
