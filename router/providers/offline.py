from __future__ import annotations

import json

from ..offline import OFFLINE_MODEL, estimate_tokens, policy_for
from ..types import CompletionRequest, ModelError, ProviderReply, Usage


def complete(request: CompletionRequest, target=None) -> ProviderReply:
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
