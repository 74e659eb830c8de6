"""The offline provider: deterministic, rule-based answers for each route.

It is a product feature, not a test double: with no model key configured the whole
product runs on it, and the UI says so. Each app registers the policy of its own
routes (in its `offline.py`, imported from AppConfig.ready):

    @offline_policy("validator")
    def validate(request: CompletionRequest) -> OfflineReply: ...
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from .types import CompletionRequest, ToolCall

OFFLINE_MODEL = "lindy-offline-rules-1"


@dataclass
class OfflineReply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


Policy = Callable[[CompletionRequest], OfflineReply]
_POLICIES: dict[str, Policy] = {}
_ids = itertools.count(1)


def offline_policy(route: str) -> Callable[[Policy], Policy]:
    def decorator(func: Policy) -> Policy:
        _POLICIES[route] = func
        return func

    return decorator


def policy_for(route: str) -> Policy | None:
    return _POLICIES.get(route)


def registered_routes() -> list[str]:
    return sorted(_POLICIES)


def tool_call(name: str, arguments: dict) -> ToolCall:
    return ToolCall(id=f"toolu_offline_{next(_ids):06d}", name=name, input=arguments)


BYTES_PER_TOKEN = 3


def estimate_tokens(text: str) -> int:
    """Conservative token estimate used when no model counter is available: one token
    per 3 bytes of UTF-8, rounded up. Real tokenizers average about 4 characters of
    English per token, so this over-counts, which is the safe side for budgets."""
    return -(-len(text.encode("utf-8")) // BYTES_PER_TOKEN)


def most_chars_within(budget: int) -> int:
    """The longest text (in characters) whose estimate is within `budget` tokens whatever its
    script: a character is at most 4 bytes of UTF-8. Lets a caller checking thousands of texts
    against a budget estimate only the few longer ones."""
    return BYTES_PER_TOKEN * budget // 4
