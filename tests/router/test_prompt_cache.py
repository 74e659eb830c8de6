"""The documented prompt-cache invalidation rules, in the fake Messages API (the tests' stand-in for
the API) and in router.prompt_cache (what the product's prefix_share metric counts): a second
request after a first reads everything, only the tools and system, or nothing, by the same rules."""

from __future__ import annotations

import copy

import pytest

from router import prompt_cache
from tests.fakes.anthropic_api import PromptCache

BREAK = {"type": "ephemeral"}
TOOLS = [{"name": f"tool_{n}", "description": "d" * 6000, "input_schema": {"type": "object"}} for n in range(2)]
TOOLS[-1]["cache_control"] = BREAK
BASE = {
    "model": "claude-sonnet-4-6",
    "tools": TOOLS,
    "system": [{"type": "text", "text": "S" * 8000, "cache_control": BREAK}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "history " * 3000, "cache_control": BREAK}]},
    ],
    "tool_choice": {"type": "auto"},
}
MIN = prompt_cache.min_cacheable_tokens(BASE["model"])  # the fake and the metric: the same minimum
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


def changed(**edits):
    body = copy.deepcopy(BASE)
    for key, value in edits.items():
        body[key] = value
    return body


def with_turn(body):
    """The second request: the first's prompt plus one more turn, with its own breakpoint."""
    body = copy.deepcopy(body)
    body["messages"] += [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                         {"role": "user", "content": [{"type": "text", "text": "next", "cache_control": BREAK}]}]
    return body


def levels(body) -> dict[str, int]:
    p = prompt_cache.prompt(body)
    tools_system = len(body["tools"]) + len(body["system"]) - 1
    return {"all": p.sizes[len(p.sizes) - 3], "tools_system": p.sizes[tools_system]}


CASES = [
    ("same", {}, "all"),
    ("tool_choice", {"tool_choice": {"type": "tool", "name": "tool_0"}}, "tools_system"),
    ("image added", {"messages": [{"role": "user", "content": [IMAGE, *BASE["messages"][0]["content"]]}]},
     "tools_system"),
    ("model", {"model": "claude-haiku-4-5"}, None),
    ("tool definition", {"tools": [TOOLS[0], {**TOOLS[1], "description": "changed"}]}, None),
    ("system", {"system": [{"type": "text", "text": "T" * 8000, "cache_control": BREAK}]}, "tools"),
    ("thinking", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, "tools_system"),
]


def fake_written(body) -> int:
    """Tokens the fake writes for `body` on an empty cache (the prefix up to its last breakpoint)."""
    return PromptCache(min_tokens=MIN).usage(body)["cache_creation_input_tokens"]


@pytest.mark.parametrize("name,edits,expected", CASES, ids=[c[0] for c in CASES])
def test_fake_and_metric_apply_the_same_invalidation_rules(name, edits, expected):
    second = with_turn(changed(**edits))
    fake = PromptCache(min_tokens=MIN)
    first_write = fake.usage(BASE)["cache_creation_input_tokens"]
    read = fake.usage(second)["cache_read_input_tokens"]
    metric = prompt_cache.read_tokens(prompt_cache.written(BASE), second)
    tools_system = {k: v for k, v in second.items() if k != "messages"} | {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}
    if expected is None:
        assert read == 0 and metric == 0
    elif expected == "tools":
        assert 0 < read < fake_written(tools_system) and 0 < metric < levels(second)["tools_system"]
    elif expected == "tools_system":
        # Sizes differ (the fake counts JSON bytes, the metric the text): the same blocks are read.
        assert read == fake_written(tools_system) and metric == levels(second)["tools_system"]
    else:
        assert read == first_write and metric == levels(second)["all"]


def test_a_prefix_below_the_models_minimum_is_never_read():
    small = {"model": "claude-sonnet-4-6", "system": [{"type": "text", "text": "short", "cache_control": BREAK}],
             "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": BREAK}]}]}
    assert prompt_cache.read_share(small, with_turn(small)) == 0
    assert prompt_cache.read_share(BASE, with_turn(BASE)) > 0.9
