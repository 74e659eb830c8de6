"""The log of a failure's example, as the reader may see it: an agent task's events up to the
failure (read from the task, under the task's own rule), or the run's own log captured with it.

No body reaches the page: tool results and third parties' messages (emails, Slack messages) show
their size and kind, not their text; an error a tool returned, and what the user and the assistant
said, are shown redacted of secrets and addresses."""

from __future__ import annotations

from lindy.failures import redact
from lindy.models import TaskEvent

from ..models import FailureEvent

MAX_EVENTS = 30
_ERROR_PREFIXES = ("Execution failed", "BLOCKED", "Invalid arguments", "There is no tool", "Refused")


def _entry(event: TaskEvent) -> dict:
    actor = event.actor
    text = event.content or ""
    if actor == TaskEvent.Actor.TOOL and not text.startswith(_ERROR_PREFIXES):
        text = f"[result of {event.tool_name or 'a tool'}: {len(event.content)} characters, not shown]"
    elif actor == TaskEvent.Actor.EXTERNAL:
        text = f"[a message from a third party: {len(event.content)} characters, not shown]"
    else:
        text = redact(text, 400)
    entry = {"seq": event.seq, "actor": actor, "text": text, "at": event.created_at.isoformat(timespec="seconds")}
    if event.tool_name:
        entry["tool"] = event.tool_name
    if event.tool_arguments and actor != TaskEvent.Actor.TOOL:
        entry["arguments"] = sorted(k for k in event.tool_arguments if k != "justification")
    return entry


def example_log(event: FailureEvent) -> list[dict]:
    """The events before the failure: the task's up to `through_seq`, else the run's captured log."""
    if event.task_id:
        events = TaskEvent.objects.filter(task_id=event.task_id)
        if event.through_seq:
            events = events.filter(seq__lte=event.through_seq)
        latest = list(events.order_by("-seq")[:MAX_EVENTS])
        return [_entry(e) for e in reversed(latest)]
    return [dict(entry) for entry in event.log or []][-MAX_EVENTS:]


def repro_steps(log: list[dict]) -> list[str]:
    """Steps to reproduce, from the log: what the user asked, each tool call, what failed."""
    steps = []
    for entry in log:
        actor, text = entry.get("actor", ""), entry.get("text", "")
        if actor == TaskEvent.Actor.USER:
            steps.append(f"The user asks: {text}")
        elif entry.get("tool") and actor == TaskEvent.Actor.ASSISTANT:
            steps.append(f"The assistant calls `{entry['tool']}` with arguments {', '.join(entry.get('arguments') or [])}")
        elif actor == TaskEvent.Actor.TOOL and text.startswith(_ERROR_PREFIXES):
            steps.append(f"`{entry.get('tool', 'the tool')}` answers: {text}")
        elif actor not in (TaskEvent.Actor.ASSISTANT, TaskEvent.Actor.TOOL, TaskEvent.Actor.EXTERNAL):
            label = f"{actor} {entry.get('name', '')}".strip()
            steps.append(f"{label}: {text}")
    return steps
