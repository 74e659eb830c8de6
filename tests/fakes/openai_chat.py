"""A local server that speaks OpenAI-compatible chat completions (as DeepSeek, Atlas Cloud,
vLLM... do): `POST /v1/chat/completions`, bearer key, tool calls with JSON-string arguments.

    with FakeChatCompletions() as fake:
        fake.reply_tool_call("send_email", {"to": ["a@b.test"]})
        fake.reply_text("Hello", usage={"prompt_tokens": 10, "completion_tokens": 2})
        fake.reply_status(429, retry_after=0)
        fake.reply_transcript("Pick up milk on the way home.")   # POST /v1/audio/transcriptions

The transcription endpoint reads the multipart upload as OpenAI's does (`model` and `file`
fields, bearer key) and answers 400 when either is missing.
"""

from __future__ import annotations

import itertools
import json
from email.parser import BytesParser
from email.policy import HTTP

from .http import FakeServer, Recorded, Reply

PATH = "/v1/chat/completions"
TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"
_ids = itertools.count(1)


def completion(message: dict, *, model="deepseek-v4-flash", finish_reason=None, usage: dict | None = None) -> dict:
    if finish_reason is None:
        finish_reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-fake-{next(_ids):05d}",
        "object": "chat.completion",
        "created": 1_780_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, **(usage or {})},
    }


class FakeChatCompletions(FakeServer):
    API_KEY = "sk-atlas-test-key"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def reply_text(self, text: str, **kwargs) -> None:
        self.script("POST", PATH, [Reply(200, completion({"content": text}, **kwargs))])

    def reply_tool_call(self, name: str, arguments: dict, text: str | None = None, **kwargs) -> None:
        call = {"id": f"call_{next(_ids):05d}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}
        self.script("POST", PATH, [Reply(200, completion({"content": text, "tool_calls": [call]}, **kwargs))])

    def reply_status(self, status: int, *, retry_after: float | None = None) -> None:
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        body = {"error": {"message": "fake error", "type": "rate_limit_error" if status == 429 else "server_error"}}
        self.script("POST", PATH, [Reply(status, body, headers)])

    @property
    def chat_requests(self):
        return self.requests_to("POST", PATH)

    def reply_transcript(self, text: str) -> None:
        self.script("POST", TRANSCRIPTIONS_PATH, [lambda recorded: _transcription(recorded, text)])

    def reply_transcription_status(self, status: int) -> None:
        body = {"error": {"message": "fake transcription error", "type": "server_error"}}
        self.script("POST", TRANSCRIPTIONS_PATH, [Reply(status, body)])

    @property
    def transcription_requests(self):
        return self.requests_to("POST", TRANSCRIPTIONS_PATH)


def multipart_fields(recorded: Recorded) -> dict[str, tuple[str | None, bytes]]:
    """{field name: (filename or None, bytes)} of a multipart/form-data request."""
    head = f"Content-Type: {recorded.headers.get('content-type', '')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + recorded.body)
    if not message.is_multipart():
        return {}
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields


def _transcription(recorded: Recorded, text: str) -> Reply:
    if recorded.headers.get("authorization") != f"Bearer {FakeChatCompletions.API_KEY}":
        return Reply(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
    fields = multipart_fields(recorded)
    if "model" not in fields or "file" not in fields or not fields["file"][1]:
        return Reply(400, {"error": {"message": "model and file are required", "type": "invalid_request_error"}})
    return Reply(200, {"text": text})

