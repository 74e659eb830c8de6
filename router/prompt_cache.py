"""What a caching provider (Anthropic) would read from its prompt cache, for one request sent after
another: the rules the Messages API documents, applied to two request bodies as sent.

- The prompt is its blocks in cache order: tools, system, each message's content blocks.
- A block's cache key is the whole prefix up to it, for one model (a model never reads another
  model's cache).
- A change at one level (tools → system → messages) invalidates that level and every level after
  it; a different `tool_choice`, adding or removing images anywhere in the request, or different
  thinking parameters invalidate the messages level (tools and system stay cached).
- A request writes the prefix up to each `cache_control` breakpoint that is at least the model's
  minimum cacheable length; a later request reads the longest written prefix found at one of its
  own breakpoints or up to LOOKBACK_BLOCKS blocks before one.

`read_share(first, second)` is the share of `second`'s prompt the cache would serve from what
`first` wrote: the honest "shared prefix" of two calls (validator V2). Keys are each block's exact
JSON; sizes are the text the model reads (a text block's text, a tool call's name and input, a
tool definition's JSON), estimated at 4 bytes a token.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

LOOKBACK_BLOCKS = 20
BYTES_PER_TOKEN = 4
# Minimum cacheable prefix by model family (Anthropic's documentation, see REFERENCE.md); a
# prefix below it is neither written nor read. Unknown models get the smallest documented minimum.
MIN_CACHEABLE_TOKENS = (
    ("claude-opus-4-5", 4096), ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048), ("claude-3-5-haiku", 2048), ("claude-haiku-3-5", 2048),
)
DEFAULT_MIN_CACHEABLE_TOKENS = 1024


def min_cacheable_tokens(model: str) -> int:
    return next((tokens for prefix, tokens in MIN_CACHEABLE_TOKENS if model.startswith(prefix)),
                DEFAULT_MIN_CACHEABLE_TOKENS)


@dataclass(frozen=True)
class Prompt:
    keys: list[str]  # per block: the cache key of the prefix ending with it
    sizes: list[int]  # per block: estimated tokens of the prefix ending with it
    breakpoints: list[int]  # indices of blocks carrying cache_control

    @property
    def total(self) -> int:
        return self.sizes[-1] if self.sizes else 0


def _image_count(messages: list[dict]) -> int:
    count = 0
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict):
                count += block.get("type") == "image"
                inner = block.get("content")
                if isinstance(inner, list):
                    count += sum(1 for b in inner if isinstance(b, dict) and b.get("type") == "image")
    return count


def _text(block) -> str:
    if isinstance(block, str):
        return block
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        return json.dumps({"name": block.get("name"), "input": block.get("input")}, ensure_ascii=False)
    if kind == "tool_result":
        content = block.get("content")
        return content if isinstance(content, str) else "\n".join(_text(b) for b in content or [])
    return json.dumps({k: v for k, v in block.items() if k not in ("cache_control", "role")}, ensure_ascii=False)


def prompt(body: dict) -> Prompt:
    """A request body (as sent to the Messages API) as cache keys and sizes."""
    tools = [dict(tool) for tool in body.get("tools") or []]
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    messages = body.get("messages") or []
    message_blocks: list[dict] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        message_blocks += [{"role": message.get("role"), **block} for block in content or []]
    # What invalidates the messages level without being a block of it.
    messages_level = json.dumps({"tool_choice": body.get("tool_choice"), "images": _image_count(messages),
                                 "thinking": body.get("thinking")}, sort_keys=True)
    digest = hashlib.sha256(str(body.get("model")).encode())
    keys, sizes, breakpoints, size = [], [], [], 0
    for index, block in enumerate([*tools, *system, *message_blocks]):
        if index == len(tools) + len(system):
            digest.update(messages_level.encode())
        digest.update(json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True).encode())
        size += len(_text(block).encode())
        keys.append(digest.hexdigest())
        sizes.append(size // BYTES_PER_TOKEN)
        if block.get("cache_control"):
            breakpoints.append(index)
    return Prompt(keys=keys, sizes=sizes, breakpoints=breakpoints)


def written(body: dict) -> set[str]:
    """The cache keys a request writes (its breakpoints at or above the model's minimum)."""
    first = prompt(body)
    minimum = min_cacheable_tokens(str(body.get("model") or ""))
    return {first.keys[p] for p in first.breakpoints if first.sizes[p] >= minimum}


def read_tokens(cached: set[str], body: dict) -> int:
    """The tokens of `body` the cache would serve, given the keys written before."""
    second = prompt(body)
    hit = -1
    for point in second.breakpoints:
        for i in range(point, max(point - LOOKBACK_BLOCKS, 0) - 1, -1):
            if second.keys[i] in cached:
                hit = max(hit, i)
                break
    return second.sizes[hit] if hit >= 0 else 0


def read_share(first: dict, second: dict) -> float:
    """Share of `second`'s prompt tokens read from the cache `first` wrote (0 when nothing is)."""
    total = prompt(second).total
    return read_tokens(written(first), second) / total if total else 0.0
