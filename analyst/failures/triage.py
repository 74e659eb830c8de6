"""The analyst's triage of a group: one model call (route analyst.triage) on the latest example's
log and its frames' code, stored on the group with the example it read."""

from __future__ import annotations

import logging

from django.utils import timezone

from router import gateway
from router.types import ModelError

from ..models import FailureEvent, FailureGroup
from . import code, log, prompts

logger = logging.getLogger(__name__)


def triage_inputs(event: FailureEvent) -> dict:
    return prompts.payload(exc_type=event.exc_type, message=event.message, kind=event.kind,
                           log=log.example_log(event), frames=code.product_frames_with_code(event.frames))


def group_triage(*, group: FailureGroup) -> dict:
    """Ask the model about the group's latest example. A failed call is stored as the error."""
    event = group.events.order_by("-created_at", "-pk").first()
    if event is None:
        return {}
    data = triage_inputs(event)
    result: dict = {"example_id": event.pk, "at": timezone.now().isoformat(timespec="seconds")}
    try:
        completion = gateway.complete(
            route=prompts.ROUTE, user=None, team=None, system=prompts.SYSTEM, messages=prompts.messages(data),
            tools=[prompts.TRIAGE_TOOL], tool_choice={"type": "tool", "name": prompts.TOOL}, budget_wait=0,
        )
        answer = next((c.input for c in completion.tool_calls if c.name == prompts.TOOL and isinstance(c.input, dict)),
                      None) or {}
        result.update(provider=completion.provider, call_id=completion.call_id,
                      **{k: str(answer.get(k) or "")[:2000] for k in ("suspected_cause", "smallest_change", "test_first")})
        if not answer:
            result["error"] = "The analyst's answer had no triage."
    except ModelError as exc:
        logger.warning("triage of failure group %s failed: %s", group.pk, exc)
        result["error"] = f"The analyst's model call failed: {exc}"
    FailureGroup.objects.filter(pk=group.pk).update(triage=result)
    group.triage = result
    return result
