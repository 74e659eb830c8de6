"""Strict parsing of the validator's output. Anything but exactly the expected shape is a
failure, and a failure blocks the action (fail closed)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .prompts import VERDICT_TOOL

KEYS = {"approved", "reasoning", "confidence", "suggestedNextStep"}
QUALITY = "quality"  # the one optional key: a separate, advisory quality assessment (V2)
CONFIDENCES = {"high", "medium", "low"}


class MalformedVerdict(ValueError):
    pass


@dataclass(frozen=True)
class Verdict:
    approved: bool
    reasoning: str
    confidence: str
    suggested_next_step: str | None
    quality_score: int | None = None
    quality_assessment: str = ""


def parse_object(data) -> Verdict:
    if not isinstance(data, dict):
        raise MalformedVerdict("The verdict is not an object.")
    # Exactly the four keys: suggestedNextStep too (null when approved), as the schema requires.
    missing = KEYS - set(data)
    if missing:
        raise MalformedVerdict(f"The verdict lacks {', '.join(sorted(missing))}.")
    extra = set(data) - KEYS - {QUALITY}
    if extra:
        raise MalformedVerdict(f"The verdict has unexpected keys: {', '.join(sorted(extra))}.")
    approved, reasoning, confidence = data["approved"], data["reasoning"], data["confidence"]
    step = data["suggestedNextStep"]
    if not isinstance(approved, bool):
        raise MalformedVerdict("approved must be true or false.")
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise MalformedVerdict("reasoning must be a non-empty string.")
    if confidence not in CONFIDENCES:
        raise MalformedVerdict("confidence must be high, medium or low.")
    if step is not None and not isinstance(step, str):
        raise MalformedVerdict("suggestedNextStep must be a string or null.")
    score, assessment = parse_quality(data.get(QUALITY))
    return Verdict(approved, reasoning.strip(), confidence, (step or "").strip() or None, score, assessment)


def parse_quality(value) -> tuple[int | None, str]:
    """(score 1-5, assessment) or (None, why it is unreadable). Quality is advisory: an unreadable
    one is recorded as such and never touches the safety verdict."""
    if value is None:
        return None, ""
    if not isinstance(value, dict):
        return None, "(the quality assessment was not an object)"
    score, assessment = value.get("score"), value.get("assessment")
    if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
        return None, "(the quality score was not an integer from 1 to 5)"
    return score, assessment.strip() if isinstance(assessment, str) else ""


def parse_completion(completion) -> Verdict:
    """One record_verdict tool call, or (for providers without tool calls) a reply that is
    exactly one JSON object. Any other tool call is refused: the validator must never act (in a
    validation turn that shares the agent's tools, this is the guard that fails closed)."""
    calls = completion.tool_calls
    if calls:
        if len(calls) != 1 or calls[0].name != VERDICT_TOOL:
            names = ", ".join(c.name for c in calls)
            raise MalformedVerdict(f"Expected one {VERDICT_TOOL} call, got: {names}.")
        return parse_object(calls[0].input)
    text = (completion.text or "").strip()
    if not text:
        raise MalformedVerdict("The validator returned nothing.")
    try:
        data = json.loads(text)
    except ValueError:
        raise MalformedVerdict("The validator's reply is not JSON.") from None
    return parse_object(data)
