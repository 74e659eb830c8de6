"""Across apps: a text from the user reaches the agent through the debounce, the agent acts
through the validator, and its reply goes back over iMessage (exempt from the validator)."""

from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from agent.models import OutboxEntry
from channels_app import services as channels
from channels_app.models import Conversation
from lindy.models import AgentTask
from memory import services as memory
from tests.channels_app.factories import SendingNumberFactory, TextingProfileFactory
from tests.fakes.linq import FakeLinq, message_received, signed
from tests.fakes.twilio_api import FakeTwilio
from validator import services as validator
from validator.models import Decision

pytestmark = pytest.mark.django_db


@pytest.fixture
def providers():
    with FakeLinq() as linq, FakeTwilio() as twilio, override_settings(**linq.settings(), **twilio.settings()):
        yield linq


def text_in(linq, profile, line, text):
    body, headers = signed(message_received(sender=profile.phone, line=line.phone, text=text, chat_id="chat-1"))
    assert Client().post("/channels/imessage/webhook", body, content_type="application/json", **headers).status_code == 200


def close_window_and_dispatch(profile):
    conversation = Conversation.objects.get(profile=profile)
    Conversation.objects.filter(pk=conversation.pk).update(deadline=timezone.now() - timedelta(seconds=1))
    outcome = channels.debounce_fire(conversation_id=conversation.pk)
    assert outcome.status == "dispatch"
    return channels.bundle_dispatch(bundle_id=outcome.bundle_id)


def test_a_text_asking_for_an_email_is_validated_executed_and_answered(cast, providers):
    line = SendingNumberFactory(phone="+14155550100")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="chat-1",
                                    imessage_capable=True, capability_checked_at=timezone.now())
    text_in(providers, profile, line, "Send an email to jane@initech.test saying the contract is signed")

    assert close_window_and_dispatch(profile) == "dispatched"

    task = AgentTask.objects.get(owner=cast.member)
    assert task.events.filter(actor="user", content__contains="jane@initech.test").exists()
    decision = Decision.objects.get(task=task, tool="send_email")
    assert decision.status == Decision.Status.EXECUTED and decision.evidence["any_by_user"]
    assert OutboxEntry.objects.filter(tool="send_email", status="recorded").exists()
    # The reply went back in the user's chat; replies to the user never reach the validator.
    sent = [r.json["message"]["parts"][0]["value"] for r in providers.sends()]
    assert sent and sent[-1].startswith("Done")
    assert not Decision.objects.filter(task=task, tool="reply_to_user").exists()
    # Typing from the dispatch until the first reply, then no bubble left on.
    calls = [(r.method, r.path.rsplit("/", 1)[-1]) for r in providers.requests if r.path.startswith("/v3/chats")]
    assert calls[:3] == [("POST", "typing"), ("DELETE", "typing"), ("POST", "messages")], calls
    assert Conversation.objects.get(profile=profile).typing_since is None


def test_an_explicit_payment_request_is_executed_once_and_reported(cast, providers):
    line = SendingNumberFactory(phone="+14155550100")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="chat-1",
                                    imessage_capable=True, capability_checked_at=timezone.now())
    text_in(providers, profile, line, "Pay invoice NW-2291 for $4,800 to Northwind")
    close_window_and_dispatch(profile)
    decision = Decision.objects.get(tool="pay_invoice")
    # The user named the invoice, the payee and the amount: their own words authorize it.
    assert decision.status == Decision.Status.EXECUTED, decision.reasoning
    assert OutboxEntry.objects.filter(tool="pay_invoice").count() == 1
    assert providers.sends()[-1].json["message"]["parts"][0]["value"].startswith("Done")


def test_a_standing_permission_in_the_users_memory_authorizes(cast):
    fs = memory.filesystem_for_user(cast.member)
    master = fs.files.get(path="master.md") if fs.files.filter(path="master.md").exists() else None
    memory.file_write(
        filesystem=fs, path="master.md", base_version=master.version if master else None, author_kind="person",
        author=cast.member, content="# Me\n\n## Standing permissions\n- You may always send follow-ups after sales calls.\n"
        "\n## Contacts\n- Hooli's CEO: ceo@hooli.test\n",
    )
    history = [
        {"seq": 1, "actor": "user", "content": "Log my sales call with Hooli: they want pricing for 50 seats."},
        {"seq": 2, "actor": "assistant", "content": "Logged."},
    ]
    arguments = {"to": ["ceo@hooli.test"], "subject": "Pricing", "body": "Pricing for 50 seats attached."}
    justification = 'Your memory says "You may always send follow-ups after sales calls" and this follows the Hooli call.'
    allowed = validator.check(user=cast.member, team=cast.team, tool="send_email", arguments=arguments,
                              justification=justification, history=history)
    assert allowed.status == Decision.Status.ALLOWED, allowed.reasoning
    assert any(s["where"] == "memory" for q in allowed.evidence["quotes"] for s in q["sources"])

    # The same words in the TEAM's memory are not the user's authorization.
    other = validator.check(user=cast.admin, team=cast.team, tool="send_email", arguments=arguments,
                            justification=justification, history=history)
    assert other.status == Decision.Status.BLOCKED


def test_an_agent_run_that_fails_after_acting_is_never_run_again(cast, providers, monkeypatch):
    """The real agent executes the email, then crashes: the bundle is failed, not retried, so the
    email goes once and the user is never answered twice (by a retry, a redelivery or the sweep)."""
    from channels_app.models import InboundBundle
    from validator import services as validator_services

    line = SendingNumberFactory(phone="+14155550100")
    profile = TextingProfileFactory(user=cast.member, phone="+16505550001", number=line, chat_id="chat-1",
                                    imessage_capable=True, capability_checked_at=timezone.now())
    text_in(providers, profile, line, "Send an email to jane@initech.test saying the contract is signed")

    def crash(**kwargs):
        raise RuntimeError("worker lost its database connection")

    monkeypatch.setattr(validator_services, "decision_mark_executed", crash)
    assert close_window_and_dispatch(profile) == "failed"
    bundle = InboundBundle.objects.get()
    assert bundle.status == InboundBundle.Status.FAILED and "database connection" in bundle.error

    monkeypatch.undo()
    assert channels.bundle_dispatch(bundle_id=bundle.pk) == "already"
    InboundBundle.objects.filter(pk=bundle.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert channels.debounce_recover()["bundles"] == 0
    assert OutboxEntry.objects.filter(tool="send_email").count() == 1
    assert AgentTask.objects.get(owner=cast.member).events.filter(actor="user").count() == 1
    assert not providers.sends()  # the crash came before the reply; no second run sends one either
    assert Conversation.objects.get(profile=profile).typing_since is None


def test_a_reply_to_a_user_who_never_texted_is_a_failure_the_agent_sees(cast, providers):
    from agent import loop as agent_loop
    from tests.validator.helpers import task_with

    task = task_with(cast.member, cast.team, [("user", "What's on my calendar tomorrow?")])
    agent_loop.run(task)
    entry = OutboxEntry.objects.get(tool="reply_to_user")
    assert entry.status == "failed" and "never texted" in entry.error
    assert not providers.sends()
    result = task.events.filter(actor="tool", tool_name="reply_to_user").get()
    assert result.content.startswith("The message was not sent to the user")
