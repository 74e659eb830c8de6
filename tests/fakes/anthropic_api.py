"""A local server that speaks the Anthropic Messages API, for the real `anthropic` SDK.

    with FakeAnthropic() as fake:
        fake.reply_text("Hello")
        fake.reply_tool_use("send_email", {"to": ["a@b.test"]})
        fake.reply_status(429, retry_after=0)
        with override_settings(**fake.settings()): ...

With `prompt_cache=True` it keeps a prompt cache the way the API does and reports it in each
reply's usage (replacing the scripted input and cache numbers): the prompt is its blocks in cache
order (tools, system, messages' content blocks); a `cache_control` breakpoint writes the prefix
up to it (when it is at least `min_cacheable_tokens` long); a later request reads the longest
cached prefix found at a breakpoint or up to 20 blocks before one, for the same model.
input_tokens counts what was neither read nor written. Tokens are estimated as 4 bytes each.

It applies the documented invalidation rules ("What invalidates the cache", Anthropic's prompt
caching and tool-use-with-prompt-caching pages): a change at one level of tools → system →
messages invalidates that level and the ones after it (a block's key is the whole prefix up to
it, for one model); a different `tool_choice`, adding or removing images anywhere in the
request, or different thinking parameters invalidate the messages level while tools and system
stay cached.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import threading

from .http import FakeServer, Recorded, Reply

_ids = itertools.count(1)


def message(content: list[dict], *, model="claude-sonnet-4-6", stop_reason=None, usage: dict | None = None) -> dict:
    if stop_reason is None:
        stop_reason = "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
    return {
        "id": f"msg_fake_{next(_ids):05d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 100, "output_tokens": 20,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            **(usage or {}),
        },
    }


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_use_block(name: str, arguments: dict) -> dict:
    return {"type": "tool_use", "id": f"toolu_fake_{next(_ids):05d}", "name": name, "input": arguments}


LOOKBACK_BLOCKS = 20


def _blocks(body: dict) -> tuple[list[dict], int]:
    """The request's prompt blocks in cache order (tools, system, each message's content blocks),
    and the index of the first message block (where the messages level starts)."""
    out: list[dict] = [dict(tool) for tool in body.get("tools") or []]
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    out += [dict(block) for block in system]
    first_message = len(out)
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out += [{"role": message.get("role"), **block} for block in content or []]
    return out, first_message


def _images(value) -> int:
    """Image blocks anywhere in the request's messages (tool results included)."""
    if isinstance(value, dict):
        return (value.get("type") == "image") + sum(_images(v) for v in value.values())
    if isinstance(value, list):
        return sum(_images(v) for v in value)
    return 0


def _messages_level(body: dict) -> bytes:
    """What the messages level's keys also depend on besides its blocks."""
    return json.dumps({"tool_choice": body.get("tool_choice"), "images": _images(body.get("messages")),
                       "thinking": body.get("thinking")}, sort_keys=True).encode()


class PromptCache:
    def __init__(self, min_tokens: int):
        self.min_tokens = min_tokens
        self.keys: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, body: dict) -> dict:
        blocks, first_message = _blocks(body)
        breakpoints = [i for i, block in enumerate(blocks) if block.get("cache_control")]
        model = str(body.get("model"))
        keys, sizes, digest, size = [], [], hashlib.sha256(model.encode()), 0
        for index, block in enumerate(blocks):
            if index == first_message:
                digest.update(_messages_level(body))
            text = json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)
            digest.update(text.encode())
            size += len(text.encode())
            keys.append(digest.hexdigest())
            sizes.append(size // 4)
        total = sizes[-1] if sizes else 0
        with self._lock:
            hit = -1
            for point in breakpoints:
                for i in range(point, max(point - LOOKBACK_BLOCKS, 0) - 1, -1):
                    if keys[i] in self.keys:
                        hit = max(hit, i)
                        break
            read = sizes[hit] if hit >= 0 else 0
            write = 0
            cacheable = [p for p in breakpoints if sizes[p] >= self.min_tokens]
            if cacheable and cacheable[-1] > hit:
                write = sizes[cacheable[-1]] - read
            self.keys.update(keys[p] for p in cacheable)
        return {"input_tokens": max(total - read - write, 0), "cache_read_input_tokens": read,
                "cache_creation_input_tokens": write}


class FakeAnthropic(FakeServer):
    API_KEY = "sk-ant-test-key"

    def __init__(self, *, prompt_cache: bool = False, min_cacheable_tokens: int = 1024):
        super().__init__()
        self.default("POST", "/v1/messages/count_tokens", self._count_tokens)
        self.cache = PromptCache(min_cacheable_tokens) if prompt_cache else None

    def _next_reply(self, recorded: Recorded) -> Reply:
        reply = super()._next_reply(recorded)
        if (self.cache is None or recorded.path != "/v1/messages" or reply.status != 200
                or not isinstance(reply.body, dict)):
            return reply
        body = copy.deepcopy(reply.body)
        body["usage"] = {**body.get("usage", {}), **self.cache.usage(recorded.json)}
        return Reply(reply.status, body, reply.headers, reply.delay)

    @staticmethod
    def _count_tokens(recorded) -> Reply:
        text = str(recorded.json.get("messages"))
        return Reply(200, {"input_tokens": max(1, len(text) // 4)})

    def reply(self, content: list[dict], **kwargs) -> None:
        self.script("POST", "/v1/messages", [Reply(200, message(content, **kwargs))])

    def reply_text(self, text: str, **kwargs) -> None:
        self.reply([text_block(text)], **kwargs)

    def reply_tool_use(self, name: str, arguments: dict, text: str = "", **kwargs) -> None:
        blocks = ([text_block(text)] if text else []) + [tool_use_block(name, arguments)]
        self.reply(blocks, **kwargs)

    def reply_status(self, status: int, *, retry_after: float | None = None, message_text: str = "fake error") -> None:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error", 400: "invalid_request_error"}
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        body = {"type": "error", "error": {"type": kind.get(status, "api_error"), "message": message_text}}
        self.script("POST", "/v1/messages", [Reply(status, body, headers)])

    @property
    def message_requests(self):
        return self.requests_to("POST", "/v1/messages")

    def settings(self, **extra) -> dict:
        """Settings that point the gateway's real client at this server."""
        return {
            "ANTHROPIC_API_KEY": self.API_KEY,
            "ANTHROPIC_BASE_URL": self.url,
            "MODEL_OFFLINE": False,
            "ANTHROPIC_MAX_RETRIES": 2,
            "ANTHROPIC_TIMEOUT": 10,
            **extra,
        }
