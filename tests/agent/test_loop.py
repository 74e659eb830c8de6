"""The agent loop: inbound messages, validated and exempt tool calls, recovery after a block,
tool adapters (user channel seam, Slack, outbox)."""

import pytest
from django.test import override_settings

from agent import loop as agent_loop
from agent import services as agent_services
from agent.models import OpenTask, OutboxEntry
from lindy import services
from router.models import CallScore, ModelCall
from tests.fakes.anthropic_api import FakeAnthropic, text_block, tool_use_block
from tests.fakes.slack_chat import FakeSlack
from tests.validator.helpers import FAILING, RECORDER, SENT, task_with
from validator.models import Decision

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def recorder(seam):
    seam.user_message_sender = RECORDER
    SENT.clear()
    yield SENT


def inbound(user, text, ref="chat-1", channel="imessage"):
    return agent_services.handle_inbound(user=user, channel=channel, conversation_ref=ref,
                                messages=[{"text": text, "received_at": "2026-11-29T10:00:00+00:00"}])


def test_explicit_send_is_validated_executed_and_reported(cast):
    task = inbound(cast.member, "Send an email to jane@initech.test saying the contract is signed.")
    user_event = task.events.get(seq=1)
    assert (user_event.actor, user_event.created_at.isoformat()) == ("user", "2026-11-29T10:00:00+00:00")
    decision = Decision.objects.get(task=task)
    assert (decision.tool, decision.status) == ("send_email", Decision.Status.EXECUTED)
    assert decision.arguments["to"] == ["jane@initech.test"] and "justification" not in decision.arguments
    assert decision.execution_result["adapter"] == "outbox"
    outbox = OutboxEntry.objects.get(tool="send_email")
    assert outbox.decision == decision and outbox.status == "recorded"
    # The exempt reply reached the user through the channels seam, on their channel.
    assert len(SENT) == 1 and SENT[0]["channel"] == "imessage" and SENT[0]["body"].startswith("Done")
    assert OutboxEntry.objects.get(tool="reply_to_user").status == "sent"
    assert Decision.objects.filter(tool="reply_to_user").count() == 0  # exempt: never validated
    tools_used = list(task.events.exclude(tool_name="").values_list("actor", "tool_name"))
    assert tools_used == [("assistant", "send_email"), ("tool", "send_email"),
                          ("assistant", "reply_to_user"), ("tool", "reply_to_user")]


def test_messages_of_one_conversation_feed_one_task(cast):
    first = inbound(cast.member, "hello there")
    second = inbound(cast.member, "one more thing")
    other = inbound(cast.member, "different chat", ref="chat-2")
    assert first.pk == second.pk != other.pk
    assert OpenTask.objects.count() == 2
    assert list(first.events.filter(actor="user").values_list("content", flat=True)) == ["hello there", "one more thing"]


def test_a_bundle_handed_over_again_records_each_text_once_and_is_answered_once(cast):
    """Channels hand a bundle over again when the worker died before the agent acted (its texts may
    already be on the task); a bundle whose task was answered meanwhile runs nothing."""
    messages = [{"text": "what's on today?", "received_at": "2026-11-29T10:00:00.123456+00:00"},
                {"text": "and tomorrow?", "received_at": "2026-11-29T10:00:01+00:00"}]
    task = agent_services.conversation_task(user=cast.member, channel="imessage", conversation_ref="chat-9",
                                            first_text="what's on today?")
    services.task_event_add(task=task, actor="user", content="what's on today?",
                            created_at=agent_services._received_at(messages[0]["received_at"]))  # the killed run's
    again = agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-9",
                                          messages=messages)
    assert again.pk == task.pk
    assert list(task.events.filter(actor="user").values_list("content", flat=True)) == [
        "what's on today?", "and tomorrow?"]
    assert len(SENT) == 1
    agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-9", messages=messages)
    assert task.events.filter(actor="user").count() == 2 and len(SENT) == 1


class Killed(BaseException):
    """A worker killed outright: nothing after this point runs, no handler catches it."""


def test_a_run_killed_after_its_reply_was_proposed_is_resumed_and_answers_once(cast, monkeypatch):
    """The worker died right after the proposal event was committed, before the reply went out.
    Handed over again, the agent executes that proposal once (keyed in the outbox) and does not
    run the turn again; a third hand-over does nothing."""
    messages = [{"text": "what's on today?", "received_at": "2026-11-29T10:00:00+00:00"}]
    proposed = agent_loop._call_event

    def killed_after_proposal(task, tool, arguments, justification, call_id):
        proposed(task, tool, arguments, justification, call_id)
        raise Killed()

    monkeypatch.setattr(agent_loop, "_call_event", killed_after_proposal)
    with pytest.raises(Killed):
        agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-9",
                                      messages=messages)
    monkeypatch.setattr(agent_loop, "_call_event", proposed)
    assert SENT == [] and OutboxEntry.objects.filter(tool="reply_to_user").count() == 0
    calls_before = ModelCall.objects.filter(route="agent").count()

    task = agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-9",
                                         messages=messages)
    assert len(SENT) == 1 and SENT[0]["channel"] == "imessage"
    # Resumed from the proposal and its result: the one model turn after it closes the run.
    assert ModelCall.objects.filter(route="agent").count() == calls_before + 1
    assert OutboxEntry.objects.get(tool="reply_to_user").status == "sent"
    assert list(task.events.exclude(tool_name="").values_list("actor", "tool_name")) == [
        ("assistant", "reply_to_user"), ("tool", "reply_to_user")]

    agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-9", messages=messages)
    assert len(SENT) == 1 and task.events.filter(tool_name="reply_to_user").count() == 2


def test_a_validated_action_killed_before_it_ran_runs_once_with_its_decision(cast, monkeypatch):
    """Killed after the validator allowed an action and its proposal was recorded: the resumed run
    executes it under the same decision (not validated again), once; then the agent goes on and
    replies, once."""
    messages = [{"text": "Send an email to jane@initech.test saying the contract is signed.",
                 "received_at": "2026-11-29T10:00:00+00:00"}]
    proposed = agent_loop._call_event

    def killed_after_email_proposal(task, tool, arguments, justification, call_id):
        proposed(task, tool, arguments, justification, call_id)
        if tool == "send_email":
            raise Killed()

    monkeypatch.setattr(agent_loop, "_call_event", killed_after_email_proposal)
    with pytest.raises(Killed):
        agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-9",
                                      messages=messages)
    monkeypatch.setattr(agent_loop, "_call_event", proposed)
    assert Decision.objects.get(tool="send_email").status == Decision.Status.ALLOWED
    assert not OutboxEntry.objects.exists()

    for _ in range(2):
        task = agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="chat-9",
                                             messages=messages)
    decision = Decision.objects.get(tool="send_email")  # one decision: the resumed run did not ask the validator again
    assert decision.status == Decision.Status.EXECUTED
    assert OutboxEntry.objects.get(tool="send_email").decision == decision
    assert len(SENT) == 1 and OutboxEntry.objects.filter(tool="reply_to_user").count() == 1
    assert task.events.filter(actor="tool", tool_name="send_email").count() == 1


def test_bundle_with_attachment_and_reaction(cast):
    task = agent_services.handle_inbound(user=cast.member, channel="slack", conversation_ref="D1", messages=[
        {"text": "see this", "received_at": "2026-11-29T10:00:00Z", "attachments": [{"name": "deck.pdf"}]},
        {"text": "", "received_at": "2026-11-29T10:00:05Z", "reaction": "👍"},
    ])
    contents = list(task.events.filter(actor="user").values_list("content", flat=True))
    assert contents == ["see this [attachment: deck.pdf]", "[reacted 👍]"]


def test_failed_user_message_is_recorded_and_reported_to_the_agent(cast, seam):
    seam.user_message_sender = FAILING
    task = inbound(cast.member, "hello")
    entry = OutboxEntry.objects.get(tool="reply_to_user")
    assert entry.status == "failed" and "ConnectionError" in entry.error
    result = task.events.filter(actor="tool", tool_name="reply_to_user").get()
    assert "failed" in result.content
    # The agent was told: its closing words say the user was not reached.
    assert task.events.filter(actor="assistant", content__contains="could not reach the user").exists()


def test_slack_post_goes_through_slack_sdk_with_the_teams_installation(cast):
    with FakeSlack() as slack, override_settings(**slack.settings()):
        slack.install(cast.team)
        task = inbound(cast.member, "Post in #launch saying we ship on Friday")
    assert slack.posts == [{"channel": "C0LAUNCH", "text": "we ship on Friday"}]
    entry = OutboxEntry.objects.get(tool="post_slack_message")
    assert entry.adapter == "slack" and entry.status == "sent" and entry.response["channel"] == "C0LAUNCH"
    assert Decision.objects.get(task=task).status == Decision.Status.EXECUTED


def test_slack_refusal_is_an_error_result_not_silence(cast):
    with FakeSlack() as slack, override_settings(**slack.settings()):
        slack.install(cast.team)
        inbound(cast.member, "Post in #secret-room saying hi")
    entry = OutboxEntry.objects.get(tool="post_slack_message")
    assert entry.status == "failed" and entry.error == "channel_not_found"
    assert any("did not work" in s["body"] for s in SENT)


def test_slack_post_only_where_the_assistant_was_added(cast):
    with FakeSlack() as slack, override_settings(**slack.settings()):
        slack.install(cast.team, channels=("#general",))
        inbound(cast.member, "Post in #launch saying we ship on Friday")
    assert slack.posts == []
    entry = OutboxEntry.objects.get(tool="post_slack_message")
    assert entry.status == "failed" and entry.error == "not_in_channel"


def test_another_teams_slack_installation_is_never_used(cast):
    with FakeSlack() as slack, override_settings(**slack.settings()):
        slack.install(cast.other_team)
        inbound(cast.member, "Post in #launch saying we ship on Friday")
    assert slack.posts == []
    assert OutboxEntry.objects.get(tool="post_slack_message").adapter == "outbox"  # recorded: no Slack for Acme


@pytest.fixture
def fake():
    with FakeAnthropic() as server, override_settings(**server.settings()):
        yield server


def test_blocked_call_goes_back_to_the_agent_which_asks_the_user(cast, fake):
    task = task_with(cast.member, cast.team, [
        ("user", "Jane at Initech is jane@initech.test."),
        ("external", "Hi, can you send me the report?", "jane@initech.test"),
    ])
    justification = 'The recipient asked "can you send me the report?"'
    fake.reply_tool_use("send_email", {"to": ["jane@initech.test"], "subject": "Report", "body": "Attached.",
                                       "justification": justification})
    fake.reply_tool_use("record_verdict", {"approved": False, "reasoning": "A third party asked; the user did not.",
                                           "confidence": "high", "suggestedNextStep": "Ask the user by SMS."})
    fake.reply_tool_use("send_sms_to_user", {"body": "Jane asked for the report. Shall I send it?"})
    fake.reply_text("I asked the user.")
    result = agent_loop.run(task)
    assert result.stopped == "done" and result.tool_calls == ["send_email", "send_sms_to_user"]

    requests = [r.json for r in fake.message_requests]
    # The validation (the second request) keeps the agent's tool_choice, so it reads the agent's cache.
    assert [r["tool_choice"]["type"] for r in requests] == ["auto", "auto", "auto", "auto"]
    agent_tools = {t["name"]: t for t in requests[0]["tools"]}
    assert "justification" in agent_tools["send_email"]["input_schema"]["required"]
    assert "jane@initech.test" not in requests[0]["system"][0]["text"]  # outside text stays in the fenced history
    # The history carries the agent's cache breakpoint (the validator reads the same prefix).
    assert "<task_history>" in requests[0]["messages"][0]["content"][0]["text"]
    assert requests[0]["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    tool_result = requests[2]["messages"][-1]["content"][0]
    assert tool_result["is_error"] is True
    assert "A third party asked" in tool_result["content"] and "Ask the user by SMS." in tool_result["content"]

    decision = Decision.objects.get(task=task, tool="send_email")
    assert decision.status == Decision.Status.BLOCKED and decision.justification == justification
    assert decision.tool_call_id.startswith("toolu_")
    assert not OutboxEntry.objects.filter(tool="send_email").exists()
    assert SENT == [{"user": cast.member.email, "body": "Jane asked for the report. Shall I send it?", "channel": "sms"}]
    assert task.events.filter(actor="assistant", content="I asked the user.").exists()
    # The blocked proposal is an outcome signal for model rollouts on the agent route.
    agent_call = ModelCall.objects.filter(route="agent").order_by("pk").first()
    assert CallScore.objects.get(call=agent_call, metric="validator.blocked").value == 1.0


def test_validated_call_without_justification_is_blocked_without_a_validator_call(cast, fake):
    task = task_with(cast.member, cast.team, [("user", "Delete message m-1")])
    fake.reply_tool_use("delete_email", {"message_id": "m-1"})
    fake.reply_text("Okay.")
    agent_loop.run(task)
    assert len(fake.message_requests) == 2
    assert ModelCall.objects.filter(route="validator").count() == 0
    assert CallScore.objects.get(metric="validator.blocked").value == 1.0
    decision = Decision.objects.get(task=task)
    assert decision.status == Decision.Status.BLOCKED and "no justification" in decision.reasoning
    assert fake.message_requests[1].json["messages"][-1]["content"][0]["is_error"] is True


def test_unknown_tools_and_bad_arguments_are_error_results(cast, fake):
    task = task_with(cast.member, cast.team, [("user", "hi")])
    fake.reply([tool_use_block("launch_rockets", {}), tool_use_block("send_email", {"to": "x@y.test"})])
    fake.reply([text_block("Sorry.")])
    agent_loop.run(task)
    results = fake.message_requests[1].json["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, True]
    assert "no tool named" in results[0]["content"] and "subject: required" in results[1]["content"]
    assert Decision.objects.count() == 0 and OutboxEntry.objects.count() == 0


def test_turns_are_bounded(cast, fake):
    task = task_with(cast.member, cast.team, [("user", "search forever")])
    for _ in range(3):
        fake.reply_tool_use("search_tasks", {"query": "forever"})
    result = agent_loop.run(task, max_turns=3)
    assert result.stopped == "max_turns" and len(fake.message_requests) == 3


def test_model_error_is_recorded_on_the_task(cast, fake):
    for _ in range(3):
        fake.reply_status(500)
    task = task_with(cast.member, cast.team, [("user", "hi")])
    assert agent_loop.run(task).stopped == "model_error"
    assert task.events.filter(actor="assistant", content__contains="model call failed").exists()


def test_agent_run_task_is_idempotent(cast):
    from agent.tasks import agent_run

    task = task_with(cast.member, cast.team, [("user", "hello")])
    assert agent_run(task.pk) == "done"
    count = task.events.count()
    assert agent_run(task.pk) == "answered" and task.events.count() == count
    assert agent_run(999999) == "gone"


def test_approved_call_executes_after_the_validator_call(cast, fake):
    task = task_with(cast.member, cast.team, [("user", "Post in #general that lunch is at noon")])
    fake.reply_tool_use("post_slack_message", {"channel": "#general", "text": "Lunch is at noon.",
                                               "justification": '"Post in #general that lunch is at noon"'})
    fake.reply_tool_use("record_verdict", {"approved": True, "reasoning": "The user asked.", "confidence": "high",
                                           "suggestedNextStep": None})
    fake.reply_text("Posted.")
    result = agent_loop.run(task)
    assert result.stopped == "done"
    decision = Decision.objects.get(task=task)
    assert decision.status == Decision.Status.EXECUTED and decision.executed_at
    assert decision.evidence["quotes"][0]["by_user"] is True
    entry = OutboxEntry.objects.get(decision=decision)
    assert entry.adapter == "outbox" and entry.status == "recorded"  # no Slack token configured
    agent_call = ModelCall.objects.filter(route="agent").order_by("pk").first()
    assert CallScore.objects.get(call=agent_call, metric="validator.blocked").value == 0.0
    tool_result = fake.message_requests[2].json["messages"][-1]["content"][0]
    assert tool_result["is_error"] is False and "recorded in the outbox" in tool_result["content"]


def test_a_calendar_event_for_the_user_alone_runs_without_the_validator(cast, fake):
    task = task_with(cast.member, cast.team, [("user", "Block two hours of focus time tomorrow morning")])
    fake.reply_tool_use("create_calendar_event", {"title": "Focus", "start": "2026-11-30T09:00",
                                                  "end": "2026-11-30T11:00", "attendees": [],
                                                  "justification": '"Block two hours of focus time"'})
    fake.reply_text("Blocked the time.")
    assert agent_loop.run(task).stopped == "done"
    assert len(fake.message_requests) == 2  # no validator call in between
    assert Decision.objects.count() == 0
    entry = OutboxEntry.objects.get(tool="create_calendar_event")
    assert entry.status == "recorded" and entry.decision is None


def test_an_allowed_action_that_fails_to_run_is_not_called_executed(cast):
    with FakeSlack() as slack, override_settings(**slack.settings()):
        slack.install(cast.team)
        task = inbound(cast.member, "Post in #secret-room saying hi")
    decision = Decision.objects.get(task=task, tool="post_slack_message")
    assert decision.status == Decision.Status.EXECUTION_FAILED
    assert decision.execution_result["ok"] is False
