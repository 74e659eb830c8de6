"""The OpenAI-compatible provider against a local chat-completions server: translation both
ways, tool calls, retries, and the call's cost on its own target's prices."""

from decimal import Decimal

import pytest
from django.test import override_settings

from router import gateway, routing
from router.models import ModelCall, Route
from router.providers.openai_compat import to_chat_messages
from router.types import ModelError
from tests.fakes.openai_chat import FakeChatCompletions

from .helpers import cheap_target

TOOLS = [{
    "name": "send_email",
    "description": "Send an email.",
    "input_schema": {"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"}}}},
}]


@pytest.fixture
def atlas(monkeypatch, db):
    with FakeChatCompletions() as fake, override_settings(MODEL_OFFLINE=False):
        monkeypatch.setenv("LINDY_PROVIDER_KEY_ATLAS", FakeChatCompletions.API_KEY)
        monkeypatch.setenv("LINDY_PROVIDER_URL_ATLAS", fake.base_url)  # the host the key is bound to
        target = cheap_target(base_url=fake.base_url)
        route = Route.objects.get(name="agent")
        route.baseline = target
        route.save()
        fake.target = target
        yield fake


def test_tool_call_round_trip_and_cost(atlas, cast):
    atlas.reply_tool_call(
        "send_email", {"to": ["jane@initech.test"]}, text="Sending.",
        usage={"prompt_tokens": 5000, "completion_tokens": 400, "prompt_tokens_details": {"cached_tokens": 4000}},
    )
    history = [
        {"role": "user", "content": "Email Jane."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking her up."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"name": "Jane"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "jane@initech.test"}]},
            {"type": "text", "text": "Go ahead."},
        ]},
    ]
    completion = gateway.complete(
        route="agent", user=cast.member, team=cast.team, system=[{"type": "text", "text": "You are Lindy."}],
        messages=history, tools=TOOLS, tool_choice={"type": "tool", "name": "send_email"},
    )
    assert completion.provider == "openai" and completion.model == "deepseek-v4-flash"
    assert completion.text == "Sending."
    assert [(c.name, c.input) for c in completion.tool_calls] == [("send_email", {"to": ["jane@initech.test"]})]
    assert completion.stop_reason == "tool_use"
    # The reply goes back into the conversation in Anthropic shape.
    assert completion.assistant_message()["content"][1]["type"] == "tool_use"

    sent = atlas.chat_requests[0]
    assert sent.headers["authorization"] == f"Bearer {FakeChatCompletions.API_KEY}"
    body = sent.json
    assert body["model"] == "deepseek-v4-flash"
    assert body["messages"] == [
        {"role": "system", "content": "You are Lindy."},
        {"role": "user", "content": "Email Jane."},
        {"role": "assistant", "content": "Looking her up.", "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": '{"name": "Jane"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "jane@initech.test"},
        {"role": "user", "content": "Go ahead."},
    ]
    assert body["tools"] == [{"type": "function", "function": {
        "name": "send_email", "description": "Send an email.", "parameters": TOOLS[0]["input_schema"]}}]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "send_email"}}

    call = ModelCall.objects.get(pk=completion.call_id)
    assert (call.provider, call.target, call.team) == ("openai", atlas.target, cast.team)
    # 1000 uncached input tokens, 4000 cache reads, 400 output at $0.14 / $0.014 / $0.28 per million.
    assert (call.input_tokens, call.cache_read_tokens, call.output_tokens) == (1000, 4000, 400)
    expected = (Decimal(1000) * Decimal("0.14") + Decimal(4000) * Decimal("0.014") + Decimal(400) * Decimal("0.28")) / 1_000_000
    assert call.cost == expected.quantize(Decimal("0.000001")) == completion.cost
    assert call.cost > 0


def test_retries_429_then_succeeds(atlas):
    atlas.reply_status(429, retry_after=0)
    atlas.reply_text("ok")
    assert gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}]).text == "ok"
    assert len(atlas.chat_requests) == 2


def test_bounded_retries_then_a_recorded_error(atlas):
    for _ in range(3):
        atlas.reply_status(503, retry_after=0)
    with pytest.raises(ModelError, match="503"):
        gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}])
    assert len(atlas.chat_requests) == 2  # one try + max_retries=1
    call = ModelCall.objects.get()
    assert "503" in call.error and call.cost == 0


def test_missing_key_is_a_clear_error(atlas, monkeypatch):
    monkeypatch.delenv("LINDY_PROVIDER_KEY_ATLAS")
    with pytest.raises(ModelError, match="LINDY_PROVIDER_KEY_ATLAS"):
        gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}])
    assert atlas.chat_requests == []


def test_tool_arguments_that_are_not_json_are_an_error(atlas):
    from tests.fakes.http import Reply
    from tests.fakes.openai_chat import PATH, completion

    bad = completion({"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "send_email", "arguments": "{not json"}}]})
    atlas.script("POST", PATH, [Reply(200, bad)])
    with pytest.raises(ModelError, match="not JSON"):
        gateway.complete(route="agent", messages=[{"role": "user", "content": "hi"}], tools=TOOLS)


def test_key_is_never_stored(atlas):
    from router.models import Provider

    row = Provider.objects.get(name="atlas")
    assert row.api_key_env == "LINDY_PROVIDER_KEY_ATLAS"
    assert FakeChatCompletions.API_KEY not in str(list(Provider.objects.values()))
    assert routing.table().targets[atlas.target.pk].api_key_env == "LINDY_PROVIDER_KEY_ATLAS"


def test_tool_error_results_are_marked():
    messages = to_chat_messages("", [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}]}])
    assert messages == [{"role": "tool", "tool_call_id": "t1", "content": "ERROR: boom"}]
