"""The real Anthropic client. The SDK retries 429, 5xx and timeouts with exponential
backoff, bounded by ANTHROPIC_MAX_RETRIES."""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.conf import settings

from ..types import CompletionRequest, ModelError, ProviderReply, ToolCall, Usage

if TYPE_CHECKING:
    import anthropic

CACHE_BREAKPOINT = {"type": "ephemeral"}
# Tools declared with `defer_loading` (loaded by a tool-search result) need the advanced tool use
# beta on some API versions; the header changes nothing in the prompt, so the cache is unaffected.
TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"


@lru_cache(maxsize=8)
def _client(api_key: str, base_url: str | None, max_retries: int, timeout: float) -> anthropic.Anthropic:
    # Imported here, not at the top: the SDK takes seconds to import, and every process (web, each
    # worker, each management command) would pay that at start, offline or not.
    import anthropic

    # The SDK follows redirects, and httpx drops only `Authorization` on a cross-origin hop: the
    # `x-api-key` header would go to wherever the host redirects. A key goes to its own host only.
    http_client = anthropic.DefaultHttpxClient(follow_redirects=False)
    return anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout,
                               http_client=http_client)


def client() -> anthropic.Anthropic:
    if not settings.ANTHROPIC_API_KEY:
        raise ModelError("ANTHROPIC_API_KEY is not set.")
    return client_for(api_key=settings.ANTHROPIC_API_KEY, base_url=settings.ANTHROPIC_BASE_URL)


def client_for(*, api_key: str, base_url: str | None) -> anthropic.Anthropic:
    """One client per key and host in a process: its connection pool is shared by every thread
    (httpx's pool is thread-safe), so a threaded worker reuses connections instead of opening one a call."""
    return _client(api_key, base_url, settings.ANTHROPIC_MAX_RETRIES, settings.ANTHROPIC_TIMEOUT)


def _system_blocks(request: CompletionRequest) -> list[dict]:
    if isinstance(request.system, str):
        blocks: list[dict] = [{"type": "text", "text": request.system}] if request.system else []
    else:
        blocks = copy.deepcopy(request.system)
    if request.cache and blocks:
        blocks[-1]["cache_control"] = CACHE_BREAKPOINT
    return blocks


def _tools(request: CompletionRequest) -> list[dict] | None:
    if not request.tools:
        return None
    tools = copy.deepcopy(request.tools)
    if request.cache:
        # The breakpoint goes on the last tool that is part of the prompt: a deferred tool is not
        # (it is loaded later by a tool_reference), nor is a server tool without a schema.
        cached = [t for t in tools if not t.get("defer_loading") and "input_schema" in t]
        if cached:
            cached[-1]["cache_control"] = CACHE_BREAKPOINT
    return tools


def _messages(request: CompletionRequest) -> list[dict]:
    """The messages, with a breakpoint on the last block of each message in request.cache_messages
    (a string content becomes one text block to carry it)."""
    if not request.cache or not request.cache_messages:
        return request.messages
    messages = copy.deepcopy(request.messages)
    for index in request.cache_messages:
        message = messages[index]
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if content:
            content[-1]["cache_control"] = CACHE_BREAKPOINT
        message["content"] = content
    return messages


def render(request: CompletionRequest) -> dict:
    """The request body as sent (model, max_tokens, tools, system, messages, tool_choice), so a
    caller can compare two requests' rendered prefixes."""
    kwargs: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
    tools = _tools(request)
    if tools:
        kwargs["tools"] = tools
    system = _system_blocks(request)
    if system:
        kwargs["system"] = system
    kwargs["messages"] = _messages(request)
    if request.tool_choice:
        kwargs["tool_choice"] = request.tool_choice
    return kwargs


def complete(request: CompletionRequest, target=None, *, via: anthropic.Anthropic | None = None,
             extra_headers: dict[str, str] | None = None) -> ProviderReply:
    """`via` and `extra_headers`: another host's client and what it needs to hear (the fake
    model with latency, router.fake_model); by default the configured Anthropic client."""
    # JSON-shaped request fields (the SDK's TypedDicts describe the same shapes); no `stream`,
    # so the SDK returns one Message.
    kwargs = render(request)
    headers = dict(extra_headers or {})
    if any(t.get("defer_loading") for t in kwargs.get("tools") or []):
        headers["anthropic-beta"] = TOOL_SEARCH_BETA
    if headers:
        kwargs["extra_headers"] = headers
    import anthropic

    try:
        message: anthropic.types.Message = (via or client()).messages.create(**kwargs)
    except anthropic.APIError as exc:
        raise ModelError(f"{type(exc).__name__}: {exc}") from exc
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = [
        ToolCall(id=block.id, name=block.name, input=dict(block.input or {}))
        for block in message.content
        if block.type == "tool_use"
    ]
    usage = message.usage
    return ProviderReply(
        text=text,
        tool_calls=calls,
        usage=Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=getattr(usage, "cache_read_input_tokens", 0) or 0,
            cache_write_tokens=getattr(usage, "cache_creation_input_tokens", 0) or 0,
        ),
        stop_reason=message.stop_reason or "",
        model=message.model or request.model,
    )


def count_tokens(*, model: str, text: str) -> int:
    import anthropic

    try:
        result = client().messages.count_tokens(model=model, messages=[{"role": "user", "content": text}])
    except anthropic.APIError as exc:
        raise ModelError(f"{type(exc).__name__}: {exc}") from exc
    return result.input_tokens
