"""Messages to the user themself, through the channels seam (settings.LINDY_USER_MESSAGE_SENDER)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.utils.module_loading import import_string

from ..models import OutboxEntry
from .outbox import entry_create

logger = logging.getLogger(__name__)


def send(ctx, tool: str, arguments: dict, result_cls):
    channel = "sms" if tool == "send_sms_to_user" else ctx.channel
    try:
        sender = import_string(settings.LINDY_USER_MESSAGE_SENDER)
        response = sender(user=ctx.user, body=arguments["body"], channel=channel)
    except Exception as exc:
        # The agent must learn the message did not go out; the outbox keeps the failure.
        logger.warning("user message via %s failed: %s", settings.LINDY_USER_MESSAGE_SENDER, exc)
        entry = entry_create(ctx, tool, arguments, adapter="user_channel", status=OutboxEntry.Status.FAILED,
                             error=f"{type(exc).__name__}: {exc}")
        return result_cls(ok=False, adapter="user_channel", data={"outbox_id": entry.pk},
                          content=f"Sending the message to the user failed: {type(exc).__name__}: {exc}")
    response = response if isinstance(response, dict) else {"response": str(response)}
    if response.get("sent") is False:
        # Refused (the user never texted in) or no line could carry it: not sent, and the agent must know.
        reason = response.get("reason") or response.get("status") or "not sent"
        entry = entry_create(ctx, tool, arguments, adapter="user_channel", status=OutboxEntry.Status.FAILED,
                             error=reason, response=response)
        return result_cls(ok=False, adapter="user_channel", data={"outbox_id": entry.pk, **response},
                          content=f"The message was not sent to the user: {reason}")
    entry = entry_create(ctx, tool, arguments, adapter="user_channel", status=OutboxEntry.Status.SENT,
                         response=response)
    return result_cls(ok=True, adapter="user_channel", data={"outbox_id": entry.pk, **response},
                      content=f"Message sent to the user{f' over {channel}' if channel else ''}.")
