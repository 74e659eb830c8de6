"""A message to the user that did not reach them, sent again over the other channel when they ask
from their outbox: iMessage (with its SMS fallback) after a failed SMS, SMS after a failed iMessage.
Once per message: the failed entry names the entry that re-sent it."""

from __future__ import annotations

from django.db import transaction

from lindy import seams

from .models import OutboxEntry

# Refusals another channel cannot fix: the user never texted in, or said STOP.
FINAL_REFUSALS = ("never_texted", "opted_out")
SMS_TOOL, REPLY_TOOL = "send_sms_to_user", "reply_to_user"


class NotResendable(Exception):
    pass


def failed_over(entry: OutboxEntry) -> str:
    """The channel the failed message was meant for."""
    if entry.tool == SMS_TOOL or (entry.response or {}).get("channel") == "sms":
        return "sms"
    return "imessage"


def other_channel(entry: OutboxEntry) -> str:
    return "imessage" if failed_over(entry) == "sms" else "sms"


def resendable(entry: OutboxEntry) -> bool:
    response = entry.response or {}
    return (entry.adapter == "user_channel" and entry.status == OutboxEntry.Status.FAILED
            and not response.get("resent_as") and response.get("refusal") not in FINAL_REFUSALS
            and bool((entry.arguments or {}).get("body")))


def user_message_resend(*, entry_id: int, user) -> OutboxEntry:
    """Send the failed message `entry_id` of `user` again over the other channel; the new entry.
    Raises OutboxEntry.DoesNotExist (not theirs, or not a message to them) or NotResendable."""
    with transaction.atomic():
        # Locked while it is sent: a double click sends it once.
        entry = OutboxEntry.objects.select_for_update().get(pk=entry_id, user=user, adapter="user_channel")
        if not resendable(entry):
            raise NotResendable("This message cannot be sent again: it was sent, sent again already, or "
                                "no channel can carry it (you never texted the assistant, or you opted out).")
        channel = other_channel(entry)
        sender = seams.user_message_sender()
        try:
            response = sender(user=user, body=entry.arguments["body"], channel=channel)
        except Exception as exc:  # the outcome is recorded and said; nothing is raised at the person
            response = {"sent": False, "reason": f"{type(exc).__name__}: {exc}"}
        response = response if isinstance(response, dict) else {"response": str(response)}
        sent = response.get("sent") is not False
        resent = OutboxEntry.objects.create(
            team=entry.team, user=user, task=entry.task, decision=entry.decision,
            tool=SMS_TOOL if channel == "sms" else REPLY_TOOL, arguments=entry.arguments, adapter="user_channel",
            status=OutboxEntry.Status.SENT if sent else OutboxEntry.Status.FAILED, response=response,
            error="" if sent else str(response.get("reason") or response.get("status") or "not sent"),
        )
        entry.response = {**(entry.response or {}), "resent_as": resent.pk}
        entry.save(update_fields=["response", "updated_at"])
    return resent
