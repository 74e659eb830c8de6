"""The `validator` route's offline eval cases, replayed through the validator's own prompt.

A case in router/evals/validator.jsonl holds what the product would see:

    {"id", "description",
     "history": [{"actor": "user"|"assistant"|"tool"|"external", "name"?, "content"}],
     "action": {"tool", "arguments", "justification"},
     "memories"?: [{"label", "path", "content", "lines"?: [{"text", "author_kind", "author_label",
                                                             "revision_id"}]}],
     "expected": {"outcome": "block"|"allow"|"exempt"}}

The request is built exactly as `services.check` builds it (evidence check included), for the
variant under test. Exempt tools and missing justifications are answered by the product
without a model call, and the eval records them so.
"""

from __future__ import annotations

from lindy import tool_registry as registry
from memory.context import ContextDocument, MemoryLine
from router.services.evals import Shortcut

from .services import argument_block_reason, checked_evidence, validation_request
from .verdict import MalformedVerdict, parse_completion


def build_eval_request(case: dict, variant: str, *, quality: bool = False) -> dict:
    action = case["action"]
    spec = registry.get(action["tool"])
    if registry.is_exempt(registry.effect_for(spec, action.get("arguments", {}), case.get("user_email", ""))):
        raise Shortcut("exempt", f"{action['tool']} is exempt in the tool registry: no validator call")
    justification = action.get("justification") or ""
    if not justification.strip():
        raise Shortcut("block", "no justification: blocked without a model call")
    history = [{"seq": number, **event} for number, event in enumerate(case.get("history", []), start=1)]
    documents = [
        ContextDocument(**{**memory, "lines": tuple(MemoryLine(**line) for line in memory.get("lines", []))})
        for memory in case.get("memories", [])
    ]
    found = checked_evidence(action["tool"], action.get("arguments", {}), justification, history, documents,
                             case.get("user_email", ""))
    if reason := argument_block_reason(found):
        raise Shortcut("block", reason)
    return validation_request(
        tool=action["tool"], arguments=action.get("arguments", {}), justification=justification,
        evidence=found, history=history, documents=documents, variant=variant, quality=quality,
    )


def eval_verdict(completion) -> str | None:
    """The verdict as the product reads it: strict, so output the validator would refuse (and
    block as a validator failure) scores as unparsed, never as "allow"."""
    try:
        return "allow" if parse_completion(completion).approved else "block"
    except MalformedVerdict:
        return None
