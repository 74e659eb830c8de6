"""What goes into and comes out of a model call, independent of the provider.

Messages and tools use the Anthropic Messages API shapes (the richest of the providers);
other providers translate from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


class ModelError(Exception):
    """A model call failed after the gateway's retries. The call is recorded."""


NO_SPEECH_MODEL = "no speech model configured"


class NoSpeechModel(ModelError):
    """Speech to text was asked for and no OpenAI-compatible speech target is configured: nothing
    was sent anywhere. Callers say the audio could not be heard (not that it was empty)."""


@dataclass
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass
class CompletionRequest:
    route: str
    system: str | list[dict]
    messages: list[dict]
    tools: list[dict] | None = None
    tool_choice: dict | None = None
    max_tokens: int = 4096
    cache: bool = True
    model: str = ""
    prompt_variant: str = "default"
    user_id: int | None = None
    metadata: dict = field(default_factory=dict)
    # Indices of messages whose last block carries a cache breakpoint (providers that cache):
    # the agent marks its last message so its history is cached for its next turn and for the
    # validator, which sends the same prefix with the same breakpoint (validator V2).
    cache_messages: tuple[int, ...] = ()

    def system_text(self) -> str:
        if isinstance(self.system, str):
            return self.system
        return "\n\n".join(block.get("text", "") for block in self.system)

    def last_user_text(self) -> str:
        """The text of the last user message, tool results included."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return content_text(message.get("content"))
        return ""


def content_text(content) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind == "tool_result":
            parts.append(content_text(block.get("content")))
    return "\n".join(parts)


@dataclass
class ProviderReply:
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    stop_reason: str
    model: str


@dataclass
class Transcription:
    """Speech to text (a voice memo), as the gateway returns it."""

    route: str
    text: str
    provider: str
    model: str
    call_id: int | None
    latency_ms: int


@dataclass
class Completion:
    route: str
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    cost: Decimal
    provider: str
    model: str
    stop_reason: str
    prompt_variant: str
    call_id: int | None
    latency_ms: int

    def assistant_message(self) -> dict:
        """The reply as a message to append to the conversation for the next turn."""
        blocks: list[dict] = []
        if self.text:
            blocks.append({"type": "text", "text": self.text})
        for call in self.tool_calls:
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.input})
        return {"role": "assistant", "content": blocks}
