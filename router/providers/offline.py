from __future__ import annotations

import hashlib
import json

from .. import fake_model
from ..offline import OFFLINE_MODEL, estimate_tokens, policy_for
from ..types import CompletionRequest, ModelError, ProviderReply, Usage


def complete(request: CompletionRequest, target=None) -> ProviderReply:
    if fake_model.enabled():  # the same rules, behind a model's latency and HTTP (benchmarks)
        return fake_model.complete(request)
    return answer(request)


def answer(request: CompletionRequest) -> ProviderReply:
    policy = policy_for(request.route)
    if policy is None:
        raise ModelError(f"The offline provider has no rules for route {request.route!r}.")
    reply = policy(request)
    prompt = request.system_text() + json.dumps(request.messages, default=str) + json.dumps(request.tools or [])
    output = reply.text + json.dumps([c.input for c in reply.tool_calls])
    return ProviderReply(
        text=reply.text,
        tool_calls=reply.tool_calls,
        usage=Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(output)),
        stop_reason="tool_use" if reply.tool_calls else "end_turn",
        model=OFFLINE_MODEL,
    )


def transcribe(*, audio: bytes, filename: str, mime_type: str) -> str:
    """The offline stand-in for speech to text. There is no speech model on a closed network, so
    it says so, and names the recording (size and digest) so the same memo reads the same way."""
    digest = hashlib.sha256(audio).hexdigest()[:12]
    return (f"(offline transcription stand-in: no speech model is configured; recording {filename or 'audio'}, "
            f"{mime_type or 'unknown type'}, {len(audio)} bytes, sha256 {digest})")
