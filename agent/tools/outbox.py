"""The recorded outbox: actions with no live integration configured (payments, external file
shares; Gmail and Calendar until the user lets the assistant act there) are written down, with
everything needed to replay them, and reported to the agent as recorded, not sent."""

from __future__ import annotations

from lindy import tool_registry as registry

from ..models import OutboxEntry
from .execution import execution_key


def entry_create(ctx, tool: str, arguments: dict, *, adapter: str, status: str, response=None,
                 error: str = "") -> OutboxEntry:
    return OutboxEntry.objects.create(
        team=ctx.team, user=ctx.user, task=ctx.task, decision=ctx.decision, tool=tool, arguments=arguments,
        adapter=adapter, status=status, response=response, error=error,
    )


def record(ctx, tool: str, arguments: dict, result_cls):
    # Keyed like a live action: a run resumed after its worker was killed records it once.
    entry, _ = OutboxEntry.objects.get_or_create(execution_key=execution_key(ctx, tool, arguments), defaults={
        "team": ctx.team, "user": ctx.user, "task": ctx.task, "decision": ctx.decision, "tool": tool,
        "arguments": arguments, "adapter": "outbox", "status": OutboxEntry.Status.RECORDED,
    })
    return result_cls(
        ok=True, adapter="outbox",
        content=f"{registry.describe(tool, arguments)}: recorded in the outbox as entry {entry.pk} "
        "(no live integration is configured for this tool, so nothing left the system).",
        data={"outbox_id": entry.pk},
    )
