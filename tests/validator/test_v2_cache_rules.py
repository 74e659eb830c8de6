"""Validator V2 on the Messages API's real cache rules: the agent's request and the validator's
request go through the local Messages API (which applies the documented invalidation rules) with
the real `anthropic` client. The validator sends the agent's model and tool_choice, so its call
reads the agent's cached messages; a different tool_choice on one side reads nothing, and the
recorded prefix_share says the same as the API's usage."""

from __future__ import annotations

import pytest
from django.test import override_settings

from router import gateway, prompt_cache
from router.models import Route, Target
from tests.fakes.anthropic_api import FakeAnthropic
from validator import prompts, services
from validator.models import Decision

from .helpers import RECORDER, SENT, task_with

pytestmark = pytest.mark.django_db

ASK = "Please email jane@initech.test that the signed contract is attached and we can start on Monday."
JUSTIFICATION = f'The user asked: "{ASK}"'
EMAIL = {"to": ["jane@initech.test"], "subject": "Signed contract",
         "body": "Hi Jane, the signed contract is attached. We can start on Monday."}
VERDICT = {"approved": True, "reasoning": "The user asked for exactly this email.", "confidence": "high",
           "suggestedNextStep": None}
SYSTEM = "You are Lindy, the user's assistant. Act only on the user's instructions."
# About 10k tokens of task history: the messages level is what the validator must read from cache.
THREAD = "\n\n".join(
    f"From: jane@initech.test\nSubject: Services agreement ({n}/20)\n\nSection {n} covers the scope of work, "
    "milestones and acceptance, payment terms (net 30 from each accepted milestone), confidentiality both "
    "ways, intellectual property, the limitation of liability and termination for convenience with 30 "
    "days' notice. Our counsel marked two open points in the margin; tell me if anything needs changing "
    "before we sign, otherwise we countersign as soon as your signed copy arrives. Best, Jane Park, Initech"
    for n in range(1, 21)
)


@pytest.fixture(autouse=True)
def recorder(seam):
    seam.user_message_sender = RECORDER
    SENT.clear()


@pytest.fixture
def fake(cast):
    # The fake caches from the same documented minimum the metric assumes for the served model.
    model = gateway.assign("agent", cast.member).target.model
    with FakeAnthropic(prompt_cache=True, min_cacheable_tokens=prompt_cache.min_cacheable_tokens(model)) as server, \
            override_settings(**server.settings()):
        yield server


def _task(cast):
    return task_with(cast.member, cast.team, [("external", THREAD, "jane@initech.test"), ("user", ASK)])


def agent_turn(cast, fake, *, tool_choice: dict) -> dict:
    """One agent turn through the gateway (the real client), as agent.loop sends it; returns the
    request as handed to the validator."""
    assignment = gateway.assign("agent", cast.member)
    tools = services.agent_side_tools(cast.member)
    messages = [{"role": "user", "content": f"<task_history>\n{THREAD}\n\nuser: {ASK}\n</task_history>"}]
    fake.reply_tool_use("send_email", {**EMAIL, "justification": JUSTIFICATION})
    gateway.complete(route="agent", user=cast.member, assignment=assignment, system=SYSTEM, messages=messages,
                     tools=tools, tool_choice=tool_choice, cache_messages=(-1,))
    return {"system": SYSTEM, "tools": tools, "messages": messages, "cache_messages": (-1,),
            "tool_choice": tool_choice, "model": assignment.target.model,
            "accepts_images": assignment.target.accepts_images}


def validate(cast, fake, agent_request: dict) -> Decision:
    fake.reply_tool_use(prompts.VERDICT_TOOL, VERDICT)
    return services.check(user=cast.member, team=cast.team, task=_task(cast), tool="send_email", arguments=EMAIL,
                          justification=JUSTIFICATION, agent_request=agent_request)


def test_the_validator_call_reads_the_agents_cached_messages(cast, fake):
    decision = validate(cast, fake, agent_turn(cast, fake, tool_choice={"type": "auto"}))
    agent, validation = (r.json for r in fake.message_requests)
    assert validation["tool_choice"] == agent["tool_choice"] == {"type": "auto"}
    assert validation["model"] == agent["model"]
    assert decision.validation_mode == "shared_prefix" and decision.approved
    # The cache served the agent's tools, system and every message: all but the validation turn.
    assert decision.cache_read_tokens > 0
    assert decision.cache_read_tokens / decision.prompt_tokens > 0.9
    # The metric reads up to the same block as the API (the fake sizes blocks as JSON bytes, the metric
    # as the text the model reads, hence the tolerance).
    assert decision.prefix_share > 0.9
    assert decision.prefix_share == pytest.approx(decision.cache_read_tokens / decision.prompt_tokens, abs=0.03)


def test_a_different_tool_choice_on_the_validator_reads_nothing_from_the_cache(cast, fake, monkeypatch):
    """The validator as it was before: tool_choice forced to record_verdict while the agent sent
    `auto`. The Messages API drops the messages level, and the tools and system alone are below the
    minimum cacheable length: zero cache reads, and the metric says zero too."""
    built = services.shared_prefix_request

    def forced(**kwargs):
        return {**built(**kwargs), "tool_choice": {"type": "tool", "name": prompts.VERDICT_TOOL}}

    monkeypatch.setattr(services, "shared_prefix_request", forced)
    decision = validate(cast, fake, agent_turn(cast, fake, tool_choice={"type": "auto"}))
    assert fake.message_requests[1].json["tool_choice"]["type"] == "tool"
    assert decision.validation_mode == "shared_prefix"
    assert decision.cache_read_tokens == 0
    assert decision.prefix_share == 0


def test_a_different_tool_choice_on_the_agent_reads_nothing_either(cast, fake):
    """The agent sends `any`, and its handover says `auto`: the validator sends `auto`, the API
    reads nothing. The handover must be the request as sent; agent.loop builds both from one value."""
    sent = agent_turn(cast, fake, tool_choice={"type": "any"})
    decision = validate(cast, fake, {**sent, "tool_choice": {"type": "auto"}})
    assert decision.cache_read_tokens == 0


def test_a_validator_served_by_another_model_makes_its_own_call(cast, fake):
    route = Route.objects.get(name="validator")
    route.baseline = Target.objects.get(name="claude-haiku-4-5-anthropic")
    route.save()
    decision = validate(cast, fake, agent_turn(cast, fake, tool_choice={"type": "auto"}))
    assert decision.validation_mode == "separate"
    assert "claude-haiku-4-5" in decision.mode_note and "another model's cache" in decision.mode_note
    assert decision.prefix_share is None


def test_an_agent_request_without_its_model_is_a_separate_call(cast, fake):
    sent = agent_turn(cast, fake, tool_choice={"type": "auto"})
    decision = validate(cast, fake, {k: v for k, v in sent.items() if k != "model"})
    assert decision.validation_mode == "separate" and "which model" in decision.mode_note


def test_an_agent_tool_choice_that_forbids_the_verdict_is_a_separate_call(cast, fake):
    sent = agent_turn(cast, fake, tool_choice={"type": "auto"})
    decision = validate(cast, fake, {**sent, "tool_choice": {"type": "none"}})
    assert decision.validation_mode == "separate" and "tool_choice (none)" in decision.mode_note


def test_with_tool_choice_auto_a_reply_without_the_verdict_blocks(cast, fake):
    """`auto` lets the model answer in text: the guard refuses anything but one record_verdict call."""
    sent = agent_turn(cast, fake, tool_choice={"type": "auto"})
    fake.reply_text("Looks fine to me, go ahead.")
    decision = services.check(user=cast.member, team=cast.team, task=_task(cast), tool="send_email",
                              arguments=EMAIL, justification=JUSTIFICATION, agent_request=sent)
    assert decision.validation_mode == "shared_prefix"
    assert decision.status == Decision.Status.BLOCKED and not decision.approved and decision.validator_failure
    assert "not JSON" in decision.failure_reason
