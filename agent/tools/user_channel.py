"""Messages to the user themself, through the sender channels register (lindy.seams.user_message_sender)."""

from __future__ import annotations

import logging

from lindy import seams

from ..models import OutboxEntry
from .execution import execution_key, result_for

logger = logging.getLogger(__name__)


def send(ctx, tool: str, arguments: dict, result_cls):
    """Send once per execution key: the row is written pending before the channel is called, so a
    run resumed after its worker was killed finds what it already sent and does not send it again."""
    channel = "sms" if tool == "send_sms_to_user" else ctx.channel
    key = execution_key(ctx, tool, arguments)
    entry, created = OutboxEntry.objects.get_or_create(execution_key=key, defaults={
        "team": ctx.team, "user": ctx.user, "task": ctx.task, "decision": ctx.decision, "tool": tool,
        "arguments": arguments, "adapter": "user_channel", "status": OutboxEntry.Status.PENDING,
    })
    if not created:
        # A failed send may be tried again; a sent one, or one whose send was cut off (the channel
        # cannot be asked whether it went out), is never sent a second time.
        retried = OutboxEntry.objects.filter(pk=entry.pk, status=OutboxEntry.Status.FAILED).update(
            status=OutboxEntry.Status.PENDING, error="")
        if not retried:
            entry.refresh_from_db()
            return result_for(entry, result_cls, repeated=True)
    try:
        response = seams.user_message_sender()(user=ctx.user, body=arguments["body"], channel=channel)
    except Exception as exc:
        # The agent must learn the message did not go out; the outbox keeps the failure.
        logger.warning("user message to %s failed: %s", channel or "their channel", exc)
        _finish(entry, OutboxEntry.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        return result_cls(ok=False, adapter="user_channel", data={"outbox_id": entry.pk},
                          content=f"Sending the message to the user failed: {type(exc).__name__}: {exc}")
    response = response if isinstance(response, dict) else {"response": str(response)}
    if response.get("sent") is False:
        # Refused (the user never texted in) or no line could carry it: not sent, and the agent must know.
        reason = response.get("reason") or response.get("status") or "not sent"
        _finish(entry, OutboxEntry.Status.FAILED, error=reason, response=response)
        return result_cls(ok=False, adapter="user_channel", data={"outbox_id": entry.pk, **response},
                          content=f"The message was not sent to the user: {reason}")
    _finish(entry, OutboxEntry.Status.SENT, response=response)
    return result_cls(ok=True, adapter="user_channel", data={"outbox_id": entry.pk, **response},
                      content=f"Message sent to the user{f' over {channel}' if channel else ''}.")


def _finish(entry: OutboxEntry, status: str, *, error: str = "", response=None) -> None:
    entry.status, entry.error, entry.response = status, error, response
    entry.save(update_fields=["status", "error", "response", "updated_at"])
