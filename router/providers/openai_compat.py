"""Any OpenAI-compatible chat-completions host (DeepSeek, Atlas Cloud, vLLM...), over httpx.

The gateway speaks Anthropic-shaped messages and tools; this module translates them to the
chat-completions shape and the answer back. The API key is read from the environment
variable named on the provider row (LINDY_PROVIDER_KEY_<NAME> only: router.provider_keys), at
call time: it is never stored in the database.
429 and 5xx answers are retried with exponential backoff (honouring Retry-After), bounded
by the provider's max_retries.
"""

from __future__ import annotations

import json
import time

import httpx

from ..provider_keys import key_binding
from ..types import CompletionRequest, ModelError, ProviderReply, ToolCall, Usage, content_text

FINISH_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens"}
RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}
MAX_BACKOFF_SECONDS = 8.0


def to_chat_messages(system, messages: list[dict]) -> list[dict]:
    """Anthropic-shaped system + messages -> chat-completions messages."""
    out: list[dict] = []
    system_text = system if isinstance(system, str) else "\n\n".join(b.get("text", "") for b in system or [])
    if system_text:
        out.append({"role": "system", "content": system_text})
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        texts, calls, results = [], [], []
        for block in content or []:
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "tool_use":
                calls.append({
                    "id": block["id"], "type": "function",
                    "function": {"name": block["name"], "arguments": json.dumps(block.get("input") or {})},
                })
            elif kind == "tool_result":
                text = content_text(block.get("content"))
                if block.get("is_error"):
                    text = f"ERROR: {text}"
                results.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
        # Tool results answer the previous assistant turn, so they come before any new user text.
        out.extend(results)
        if role == "assistant":
            entry: dict = {"role": "assistant", "content": "\n".join(texts) or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif texts:
            out.append({"role": role, "content": "\n".join(texts)})
    return out


def to_chat_tools(tools: list[dict] | None) -> list[dict] | None:
    if not tools:
        return None
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
        # No tool search here: a deferred tool is left out rather than shown to the model.
        if not tool.get("defer_loading")
    ] or None


def to_chat_tool_choice(choice: dict | None):
    if not choice:
        return None
    kind = choice.get("type")
    if kind == "auto":
        return "auto"
    if kind == "any":
        return "required"
    if kind == "none":
        return "none"
    if kind == "tool":
        return {"type": "function", "function": {"name": choice["name"]}}
    return None


def build_body(request: CompletionRequest) -> dict:
    body: dict = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": to_chat_messages(request.system, request.messages),
    }
    tools = to_chat_tools(request.tools)
    if tools:
        body["tools"] = tools
        choice = to_chat_tool_choice(request.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
        if (request.tool_choice or {}).get("disable_parallel_tool_use"):
            body["parallel_tool_calls"] = False
    return body


def parse_usage(raw: dict | None) -> Usage:
    """Chat-completions usage -> Anthropic semantics, where input_tokens excludes cache reads."""
    raw = raw or {}
    prompt = int(raw.get("prompt_tokens") or 0)
    cached = int((raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    # DeepSeek reports its context cache separately.
    cached = cached or int(raw.get("prompt_cache_hit_tokens") or 0)
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=cached,
        cache_write_tokens=0,
    )


def parse_reply(data: dict, model: str) -> ProviderReply:
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ModelError(f"Malformed chat completion: {str(data)[:200]}") from exc
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments") or "{}"
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
        except json.JSONDecodeError as exc:
            raise ModelError(f"Tool call {function.get('name')!r} has arguments that are not JSON.") from exc
        if not isinstance(parsed, dict):
            raise ModelError(f"Tool call {function.get('name')!r} arguments are not an object.")
        calls.append(ToolCall(id=call.get("id") or "", name=function.get("name", ""), input=parsed))
    finish = choice.get("finish_reason") or ""
    return ProviderReply(
        text=message.get("content") or "",
        tool_calls=calls,
        usage=parse_usage(data.get("usage")),
        stop_reason=FINISH_REASONS.get(finish, finish),
        model=data.get("model") or model,
    )


def _retry_after(response: httpx.Response, attempt: int) -> float:
    header = response.headers.get("retry-after")
    try:
        wait = float(header) if header is not None else 0.5 * 2**attempt
    except ValueError:
        wait = 0.5 * 2**attempt
    return min(max(wait, 0.0), MAX_BACKOFF_SECONDS)


def _auth_headers(target) -> dict:
    """The bearer header for `target`'s host. A key goes only to the host its environment binds it
    to (router.provider_keys); any refusal stops the call before a byte, prompt included, leaves."""
    if target is None or not target.base_url:
        raise ModelError("This OpenAI-compatible target has no provider base URL.")
    binding = key_binding(base_url=target.base_url, key_env=target.api_key_env)
    if binding.refusal:
        raise ModelError(f"{target.host}: {binding.refusal}")
    return {"Authorization": f"Bearer {binding.key}"} if binding.key else {}


def complete(request: CompletionRequest, target=None) -> ProviderReply:
    headers = {"Content-Type": "application/json", **_auth_headers(target)}
    url = target.base_url.rstrip("/") + "/chat/completions"
    data = _post(target, url, headers=headers, json=build_body(request))
    return parse_reply(data, request.model)


def transcribe(*, audio: bytes, filename: str, mime_type: str, model: str, target=None) -> str:
    """`POST {base}/audio/transcriptions` (multipart: `model`, `file`) -> the transcript text."""
    headers = _auth_headers(target)
    url = target.base_url.rstrip("/") + "/audio/transcriptions"
    data = _post(target, url, headers=headers, data={"model": model},
                 files={"file": (filename or "audio", audio, mime_type or "application/octet-stream")})
    text = data.get("text") if isinstance(data, dict) else None
    if not isinstance(text, str):
        raise ModelError(f"Malformed transcription: {str(data)[:200]}")
    return text


def _post(target, url: str, *, headers: dict, **body) -> dict:
    """POST with the provider's bounded retries; the 200 answer's JSON, else ModelError."""
    attempts = 1 + max(int(target.max_retries), 0)
    last_error = ""
    with httpx.Client(timeout=target.timeout_seconds) as client:
        for attempt in range(attempts):
            try:
                response = client.post(url, headers=headers, **body)
            except httpx.HTTPError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                if attempt + 1 < attempts:
                    time.sleep(min(0.5 * 2**attempt, MAX_BACKOFF_SECONDS))
                    continue
                break
            if response.status_code == 200:
                try:
                    return response.json()
                except ValueError as exc:
                    raise ModelError("The provider answered 200 with a body that is not JSON.") from exc
            last_error = f"HTTP {response.status_code} from {target.host}: {response.text[:300]}"
            if response.status_code in RETRYABLE and attempt + 1 < attempts:
                time.sleep(_retry_after(response, attempt))
                continue
            break
    raise ModelError(last_error)
