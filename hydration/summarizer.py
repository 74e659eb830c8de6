"""The summarizer (route `memory.summarize`): all new items lumped together, summarized into
facts tagged episodic/procedural/semantic, each citing the items it came from.

When the items do not fit the summarizer's input budget they are split into parts that do,
each part is summarized, and the parts' facts are merged by one more call. No items, no call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from router import gateway
from router.offline import estimate_tokens
from router.types import Completion

from . import prompts

ROUTE = prompts.SUMMARIZE_ROUTE


class SummarizerError(Exception):
    pass


@dataclass
class Summary:
    facts: list[dict]
    parts: int
    calls: int


def _block_tokens(item) -> int:
    return estimate_tokens(prompts.item_block(item))


def split(items: list, budget: int, cost: Callable[[Any], int] = _block_tokens) -> list[list]:
    """Consecutive parts, each within `budget` tokens (an item alone over it gets its own part)."""
    parts: list[list] = []
    current: list = []
    used = 0
    for item in items:
        tokens = cost(item)
        if current and used + tokens > budget:
            parts.append(current)
            current, used = [], 0
        current.append(item)
        used += tokens
    if current:
        parts.append(current)
    return parts


def clean_facts(raw, allowed_ids: set[int]) -> list[dict]:
    """The facts of a record_facts call, with kinds checked and citations limited to real items."""
    facts: list[dict] = []
    seen: set[tuple[str, str]] = set()
    if not isinstance(raw, list):
        raise SummarizerError("The summarizer's record_facts call had no list of facts.")
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        text = " ".join(str(entry.get("text") or "").split())
        kind = str(entry.get("kind") or "").lower()
        if not text:
            continue
        if kind not in prompts.FACT_KINDS:
            kind = "semantic"
        ids = []
        for value in entry.get("item_ids") or []:
            try:
                value = int(value)
            except (TypeError, ValueError):
                continue
            if value in allowed_ids and value not in ids:
                ids.append(value)
        key = (kind, text.lower())
        if key in seen:
            for fact in facts:
                if (fact["kind"], fact["text"].lower()) == key:
                    fact["item_ids"] += [i for i in ids if i not in fact["item_ids"]]
            continue
        seen.add(key)
        facts.append({"kind": kind, "text": text, "item_ids": ids})
    return facts


def _facts_of(completion: Completion, allowed: set[int]) -> list[dict]:
    for call in completion.tool_calls:
        if call.name == prompts.RECORD_FACTS:
            return clean_facts(call.input.get("facts"), allowed)
    raise SummarizerError("The summarizer answered without calling record_facts.")


def summarize(items: list, *, scope: str, user=None, team=None,
              on_call: Callable[[Completion], None] = lambda c: None, budget: int | None = None) -> Summary:
    if not items:
        return Summary(facts=[], parts=0, calls=0)
    budget = budget or settings.HYDRATION_SUMMARIZER_INPUT_TOKENS
    allowed = {item.pk for item in items}
    tool_choice = {"type": "tool", "name": prompts.RECORD_FACTS}
    calls = 0
    facts: list[dict] = []
    # Each item is fenced once: its block is both what the budget counts and what the prompt holds.
    blocks = {item.pk: prompts.item_block(item) for item in items}
    parts = split(items, budget, cost=lambda item: estimate_tokens(blocks[item.pk]))
    # Prompts are built for the variant the router serves this file system's owner (prompt rollouts).
    assignment = gateway.assign(ROUTE, user)
    for part in parts:
        system, messages = prompts.summarize_prompt(part, scope=scope, variant=assignment.prompt_variant,
                                                    blocks=blocks)
        completion = gateway.complete(route=ROUTE, user=user, team=team, assignment=assignment,
                                      system=system, messages=messages,
                                      tools=[prompts.RECORD_FACTS_TOOL], tool_choice=tool_choice,
                                      metadata={"stage": "summarize"})
        calls += 1
        on_call(completion)
        facts += _facts_of(completion, {item.pk for item in part})
    if len(parts) > 1 and facts:
        system, messages = prompts.merge_prompt(facts, scope=scope, variant=assignment.prompt_variant)
        if estimate_tokens(messages[0]["content"]) <= budget:
            completion = gateway.complete(route=ROUTE, user=user, team=team, assignment=assignment,
                                          system=system, messages=messages,
                                          tools=[prompts.RECORD_FACTS_TOOL], tool_choice=tool_choice,
                                          metadata={"stage": "merge"})
            calls += 1
            on_call(completion)
            facts = _facts_of(completion, allowed)
        else:
            # The parts' facts alone exceed the budget: keep them all rather than lose any.
            facts = clean_facts(facts, allowed)
    return Summary(facts=facts, parts=len(parts), calls=calls)
