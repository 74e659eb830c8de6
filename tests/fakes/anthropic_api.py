"""A local server that speaks the Anthropic Messages API, for the real `anthropic` SDK.

    with FakeAnthropic() as fake:
        fake.reply_text("Hello")
        fake.reply_tool_use("send_email", {"to": ["a@b.test"]})
        fake.reply_status(429, retry_after=0)
        with override_settings(**fake.settings()): ...
"""

from __future__ import annotations

import itertools

from .http import FakeServer, Reply

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


class FakeAnthropic(FakeServer):
    API_KEY = "sk-ant-test-key"

    def __init__(self):
        super().__init__()
        self.default("POST", "/v1/messages/count_tokens", self._count_tokens)

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
