"""Validator V2 through the real `anthropic` SDK against the local Messages API (with its prompt
cache): the validation request is the agent's last request plus the validation turn, rides the
agent's cached prefix, records what the cache did, and refuses any tool but record_verdict."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from agent import loop as agent_loop
from agent.models import OutboxEntry
from router import gateway
from router.models import Route
from router.offline import estimate_tokens
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.openai_chat import FakeChatCompletions
from tests.router.helpers import cheap_target
from validator import prompts, services
from validator.models import Decision

from .helpers import RECORDER, SENT, task_with

pytestmark = pytest.mark.django_db

ASK = ("Please send an email to jane@initech.test saying the signed contract is attached and that we "
       "can start on Monday.")
JUSTIFICATION = f'The user asked: "{ASK}"'
EMAIL = {"to": ["jane@initech.test"], "subject": "Signed contract",
         "body": "Hi Jane, the signed contract is attached. We can start on Monday."}
VERDICT = {"approved": True, "reasoning": "The user asked for exactly this email.", "confidence": "high",
           "suggestedNextStep": None, "quality": {"score": 5, "assessment": "Says what the user asked."}}
# A realistic task (about 14k tokens): a contract thread of 24 emails, the user's and the team's memory,
# an earlier task the agent looks up. The share of the shared prefix grows with the task.
THREAD = "\n\n".join(
    f"From: jane@initech.test\nTo: {'member'}@acme.test\nSubject: Re: Services agreement ({n}/24)\n\n"
    f"Hi, here is section {n} of the services agreement for review. It covers the scope of work, the "
    "milestones and their acceptance criteria, payment terms (net 30 from each accepted milestone), "
    "confidentiality both ways, intellectual property (yours on payment), the limitation of liability, "
    "termination for convenience with 30 days' notice and the usual boilerplate on notices and governing "
    "law. Our counsel marked two open points in the margin; tell me if anything needs changing before we "
    "sign, otherwise we countersign as soon as your signed copy arrives.\n\nBest,\nJane Park\nInitech"
    for n in range(1, 25)
)
USER_MEMORY = "\n".join([
    "# How I work",
    "- I sign contracts myself; Lindy may send the signed copy to the counterparty when I ask.",
    "- Emails to clients: short, friendly, first names, no legal commentary.",
    "- Never pay an invoice without asking me first by SMS.",
    "- My working hours are 9:00-17:30 Europe/Amsterdam; meetings not before 10:00.",
    "- Jane Park (jane@initech.test) is Initech's head of operations and my contact for the services deal.",
    "- Keep Tom (tom@acme.test) in cc on anything about invoicing.",
] * 4)
TEAM_MEMORY = "\n".join([
    "# Acme clients",
    "- Initech: services agreement 2026, contact Jane Park, billing through their AP portal.",
    "- Globex: retainer, contact Hank Scorpio, monthly report on the first Monday.",
    "- Umbrella: pilot paused until Q2; do not contact without the account owner.",
] * 4)


@pytest.fixture(autouse=True)
def recorder(seam):
    seam.user_message_sender = RECORDER
    SENT.clear()


@pytest.fixture
def fake():
    with FakeAnthropic(prompt_cache=True) as server, override_settings(**server.settings()):
        yield server


def _memories(cast):
    from memory import services as memory_services

    for fs, content, author in ((memory_services.filesystem_for_user(cast.member), USER_MEMORY, cast.member),
                                (memory_services.filesystem_for_team(cast.team), TEAM_MEMORY, cast.admin)):
        current = fs.files.filter(path="master.md").first()
        memory_services.file_write(filesystem=fs, path="master.md", content=content, author_kind="person",
                                   author=author, base_version=current.version if current else None)


def _task(cast):
    return task_with(cast.member, cast.team, [
        ("external", THREAD, "jane@initech.test"),
        ("user", ASK),
    ])


def cache_order(body: dict) -> str:
    """A request body (as the fake received it) rendered as the model reads it, in cache order."""
    return gateway.rendered_prompt(system=body.get("system") or [], tools=body.get("tools"),
                                   messages=body["messages"])


def _earlier_task(cast):
    task_with(cast.member, cast.team, [
        ("user", "Set up the Initech kickoff: Jane Park runs operations there, invite her and Tom."),
        ("assistant", "Created the event “Initech kickoff” on Tuesday 10:00 with Jane Park and Tom."),
        ("external", "Thanks! Initech will send the services agreement next week, section by section.",
         "jane@initech.test"),
        ("user", "When the Initech agreement is signed, the signed copy goes to Jane, nobody else."),
    ], title="Initech kickoff")


def test_validation_rides_the_agents_prefix_and_records_cache_reads(cast, fake):
    _memories(cast)
    _earlier_task(cast)
    task = _task(cast)
    # A realistic turn first: the agent looks up the earlier task, then proposes the email.
    fake.reply_tool_use("search_tasks", {"query": "Initech"})
    fake.reply_tool_use("send_email", {**EMAIL, "justification": JUSTIFICATION})
    fake.reply_tool_use(prompts.VERDICT_TOOL, VERDICT)
    fake.reply_text("Sent.")
    result = agent_loop.run(task)
    assert result.stopped == "done"

    _, agent, validation, agent_again = (r.json for r in fake.message_requests)
    # Same tools (record_verdict deferred in both), same system, the agent's messages unchanged.
    assert validation["tools"] == agent["tools"] and validation["system"] == agent["system"]
    deferred = [t for t in agent["tools"] if t.get("defer_loading")]
    assert [t["name"] for t in deferred] == [prompts.VERDICT_TOOL]
    n = len(agent["messages"])
    assert validation["messages"][:n] == agent["messages"]
    # Appended: the tool search that loads the validator, then the instruction with the action.
    search, turn = validation["messages"][n:]
    assert search["content"][0]["name"] == prompts.TOOL_SEARCH
    assert turn["content"][0]["content"] == [{"type": "tool_reference", "tool_name": prompts.VERDICT_TOOL}]
    assert "<validation_request>" in turn["content"][1]["text"]
    # The agent's own tool_choice and model: another one would drop the cached messages.
    assert validation["tool_choice"] == agent["tool_choice"] == {"type": "auto"}
    assert validation["model"] == agent["model"]
    assert "call" in turn["content"][1]["text"] and prompts.VERDICT_TOOL in turn["content"][1]["text"]

    # The rendered prefix is byte-identical for at least 97 % of the validation's tokens.
    mine, theirs = cache_order(validation), cache_order(agent)
    shared = estimate_tokens(_common_prefix(mine, theirs)) / estimate_tokens(mine)
    assert shared >= 0.97, (shared, estimate_tokens(mine))

    decision = Decision.objects.get(task=task)
    assert decision.status == Decision.Status.EXECUTED and decision.approved
    assert decision.validation_mode == "shared_prefix" and decision.mode_note == ""
    assert decision.cache_read_tokens > 0 and decision.prefix_share >= 0.97
    assert decision.prompt_tokens == (decision.input_tokens + decision.cache_read_tokens
                                      + decision.cache_write_tokens)
    assert decision.cache_hit_rate > 0.9
    # The metric counts what the cache really read: it agrees with the Messages API's own usage.
    assert decision.prefix_share == pytest.approx(decision.cache_read_tokens / decision.prompt_tokens, abs=0.03)
    assert decision.router_target is not None and decision.cost > 0
    assert (decision.quality_score, decision.quality_assessment) == (5, "Says what the user asked.")
    # The agent's next turn reads the cache too (its prefix grew by the tool result only).
    assert agent_again["messages"][:n] == agent["messages"][:n - 1] + [agent_again["messages"][n - 1]]


def _common_prefix(a: str, b: str) -> str:
    import os

    return os.path.commonprefix([a, b])


def test_any_other_tool_in_the_validation_turn_is_a_blocked_decision(cast, fake):
    task = _task(cast)
    fake.reply_tool_use("send_email", {**EMAIL, "justification": JUSTIFICATION})
    # The validation turn sees the agent's tools: it calls one of them instead of the verdict.
    fake.reply_tool_use("send_email", {**EMAIL, "to": ["mallory@evil.test"], "justification": "x"})
    fake.reply_text("Stopped.")
    agent_loop.run(task)
    decision = Decision.objects.get(task=task)
    assert decision.status == Decision.Status.BLOCKED and not decision.approved
    assert decision.validator_failure and "send_email" in decision.failure_reason
    assert decision.validation_mode == "shared_prefix"
    assert not OutboxEntry.objects.filter(tool="send_email").exists()


def test_the_agent_never_gets_the_validator_tool(cast, fake):
    task = _task(cast)
    fake.reply_tool_use(prompts.VERDICT_TOOL, VERDICT)
    fake.reply_tool_use(prompts.TOOL_SEARCH, {"query": "record_verdict"})
    fake.reply_text("Okay.")
    agent_loop.run(task)
    second, third = (r.json for r in fake.message_requests[1:])
    refused = second["messages"][-1]["content"][0]
    assert refused["is_error"] is True and refused["content"].startswith("Refused: record_verdict")
    loader = third["messages"][-1]["content"][0]
    assert loader["is_error"] is True and "tool_reference" not in json.dumps(loader)
    assert not Decision.objects.filter(task=task).exists()


def test_offline_provider_degrades_to_a_separate_call_recorded_as_such(cast, settings):
    settings.MODEL_OFFLINE = True
    task = _task(cast)
    agent_request = {"system": "You are Lindy.", "messages": [{"role": "user", "content": ASK}],
                     "tools": services.agent_side_tools(cast.member), "cache_messages": (-1,)}
    decision = services.check(user=cast.member, team=cast.team, task=task, tool="send_email", arguments=EMAIL,
                              justification=JUSTIFICATION, agent_request=agent_request)
    assert decision.validation_mode == "separate" and "offline provider" in decision.mode_note
    assert decision.approved and decision.prefix_share is None
    assert decision.quality_score is not None  # the offline rules assess quality too, apart


def test_openai_compatible_provider_degrades_to_a_separate_call(cast, monkeypatch):
    with FakeChatCompletions() as chat, override_settings(MODEL_OFFLINE=False):
        monkeypatch.setenv("LINDY_PROVIDER_KEY_ATLAS", FakeChatCompletions.API_KEY)
        monkeypatch.setenv("LINDY_PROVIDER_URL_ATLAS", chat.base_url)  # the host the key is bound to
        route = Route.objects.get(name="validator")
        route.baseline = cheap_target(base_url=chat.base_url)
        route.save()
        chat.reply_tool_call(prompts.VERDICT_TOOL, VERDICT)
        agent_request = {"system": "You are Lindy.", "messages": [{"role": "user", "content": ASK}],
                         "tools": services.agent_side_tools(cast.member), "cache_messages": (-1,)}
        decision = services.check(user=cast.member, team=cast.team, task=_task(cast), tool="send_email",
                                  arguments=EMAIL, justification=JUSTIFICATION, agent_request=agent_request)
        sent = chat.chat_requests[0].json
    assert decision.validation_mode == "separate" and "openai provider has no tool search" in decision.mode_note
    assert [t["function"]["name"] for t in sent["tools"]] == [prompts.VERDICT_TOOL]
    assert decision.approved and decision.quality_score == 5


def test_an_agent_request_without_the_deferred_tool_is_a_separate_call(cast, fake):
    fake.reply_tool_use(prompts.VERDICT_TOOL, VERDICT)
    agent_request = {"system": "You are Lindy.", "messages": [{"role": "user", "content": ASK}], "tools": [],
                     "cache_messages": (-1,)}
    decision = services.check(user=cast.member, team=cast.team, task=_task(cast), tool="send_email",
                              arguments=EMAIL, justification=JUSTIFICATION, agent_request=agent_request)
    assert decision.validation_mode == "separate" and "lacks the deferred validator tool" in decision.mode_note


def test_quality_never_flips_a_safety_block(cast, fake):
    fake.reply_tool_use(prompts.VERDICT_TOOL, {**VERDICT, "approved": False, "reasoning": "Not authorized.",
                                               "suggestedNextStep": "Ask the user."})
    agent_request = {"system": "You are Lindy.", "messages": [{"role": "user", "content": ASK}],
                     "tools": services.agent_side_tools(cast.member), "cache_messages": (-1,)}
    decision = services.check(user=cast.member, team=cast.team, task=_task(cast), tool="send_email",
                              arguments=EMAIL, justification=JUSTIFICATION, agent_request=agent_request)
    assert decision.status == Decision.Status.BLOCKED and decision.quality_score == 5


def test_a_malformed_quality_is_recorded_and_leaves_safety_alone(cast, fake):
    fake.reply_tool_use(prompts.VERDICT_TOOL, {**VERDICT, "quality": {"score": 11, "assessment": "?"}})
    decision = services.check(user=cast.member, team=cast.team, task=_task(cast), tool="send_email",
                              arguments=EMAIL, justification=JUSTIFICATION)
    assert decision.approved and decision.quality_score is None
    assert "1 to 5" in decision.quality_assessment


def test_shared_prefix_share_measures_bytes_in_cache_order():
    agent = gateway.rendered_prompt(system="S" * 3000, messages=[{"role": "user", "content": "hi"}],
                                    cache_messages=(-1,))
    mine = gateway.rendered_prompt(system="S" * 3000, messages=[{"role": "user", "content": "hi"},
                                                                {"role": "assistant", "content": "x"}],
                                   cache_messages=(0, -1))
    assert 0.9 < gateway.shared_prefix_share(agent, mine) < 1
    assert gateway.shared_prefix_share(agent, agent) == 1
