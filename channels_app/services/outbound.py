"""Replies to a user in their one-to-one thread: iMessage first, SMS when that cannot or may not
go; the typing bubble. These replies are exempt from the action validator (the user's own chat),
which is why this module refuses anyone who has not texted in first. Every send on every line
passes the pre-send gate first (gate.send_check: opt-out, the line's ratio, its cap)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from ..models import Channel, Conversation, OutboundMessage, SendingNumber, TextingProfile
from ..providers import linq, sms
from . import gate, pool

logger = logging.getLogger(__name__)

MAX_BODY = 4000


def provider_clients_warm() -> None:
    """A worker process builds its provider clients as it starts: the first hand-over after a
    start must not pay for them (an SSL context each) before its bundle reaches the agent."""
    linq.warm()


def typing_start(*, conversation: Conversation) -> bool:
    """Shown from the moment a bundle goes to the agent until the first reply. Free for the ratio."""
    profile = conversation.profile
    if conversation.channel != Channel.IMESSAGE or not profile.chat_id or not linq.configured():
        return False
    try:
        linq.typing_start(chat_id=profile.chat_id)
    except linq.LinqError as exc:
        logger.info("typing start failed for chat %s: %s", profile.chat_id, exc)
        return False
    Conversation.objects.filter(pk=conversation.pk).update(typing_since=timezone.now())
    return True


def typing_stop(*, profile: TextingProfile) -> None:
    conversation = Conversation.objects.filter(profile=profile, typing_since__isnull=False).first()
    if conversation is None:
        return
    Conversation.objects.filter(pk=conversation.pk).update(typing_since=None)
    if profile.chat_id and linq.configured():
        try:
            linq.typing_stop(chat_id=profile.chat_id)
        except linq.LinqError as exc:
            logger.info("typing stop failed for chat %s: %s", profile.chat_id, exc)


def _capable_of_imessage(profile: TextingProfile) -> bool | None:
    """The provider's capability answer, cached on the profile for CHANNELS_CAPABILITY_TTL_DAYS."""
    fresh = profile.capability_checked_at and (
        timezone.now() - profile.capability_checked_at < timedelta(days=settings.CHANNELS_CAPABILITY_TTL_DAYS)
    )
    if profile.imessage_capable is not None and fresh:
        return profile.imessage_capable
    try:
        capable = linq.check_imessage(address=profile.phone)
    except linq.LinqError as exc:
        logger.info("capability check failed for %s: %s", profile.pk, exc)
        return profile.imessage_capable
    TextingProfile.objects.filter(pk=profile.pk).update(imessage_capable=capable, capability_checked_at=timezone.now())
    profile.imessage_capable = capable
    return capable


def _record(**fields) -> OutboundMessage:
    return OutboundMessage.objects.create(**fields)


def _result(outbound: OutboundMessage, reason: str = "") -> dict:
    return {
        "status": outbound.status,
        "sent": outbound.status == OutboundMessage.Status.SENT,
        "channel": outbound.channel,
        "number": outbound.number.phone if outbound.number is not None else "",
        "fallback": outbound.fallback_reason,
        "outbound_id": outbound.pk,
        "reason": reason or outbound.error,
    }


def _try_imessage(profile: TextingProfile, number: SendingNumber, body: str) -> str:
    """Returns the provider message id. Raises linq.LinqError."""
    if profile.chat_id:
        return linq.message_send(chat_id=profile.chat_id, body=body)["message_id"]
    created = linq.chat_create(from_phone=number.phone, to_phone=profile.phone, body=body)
    TextingProfile.objects.filter(pk=profile.pk).update(chat_id=created["chat_id"])
    profile.chat_id = created["chat_id"]
    return created["message_id"]


def _sms_line(profile: TextingProfile) -> SendingNumber | None:
    if profile.sms_number is not None and profile.sms_number.active:
        return profile.sms_number
    return pool.healthiest_number(Channel.SMS)


def user_message_send(*, user, body: str, channel: str | None = None) -> dict:
    """Send `body` to `user` in their one-to-one thread. `channel` None or "imessage": iMessage with
    SMS fallback; "sms": SMS only. Every attempt is recorded; returns what happened."""
    body = (body or "").strip()
    if not body:
        raise ValueError("An empty message cannot be sent.")
    if len(body) > MAX_BODY:
        raise ValueError(f"Messages are limited to {MAX_BODY} characters.")
    if channel not in (None, Channel.IMESSAGE, Channel.SMS):
        raise ValueError(f"Unknown channel {channel!r}: use 'imessage' or 'sms'.")

    profile = TextingProfile.objects.select_related("number", "sms_number").filter(user=user).first()
    if profile is None or profile.first_texted_at is None:
        reason = "The user has never texted in; the assistant does not start conversations."
        outbound = _record(user=user, profile=profile, status=OutboundMessage.Status.REFUSED, body=body, error=reason,
                           refusal=OutboundMessage.Refusal.NEVER_TEXTED)
        return _result(outbound, reason)
    # An opt-out of the channel asked for ends the send: falling back to the other channel would
    # text someone who just said STOP to us.
    opted_out = gate.opt_out_for(phone=profile.phone, channel=channel or Channel.IMESSAGE)
    if opted_out is not None:
        return _result(_refuse(user=user, profile=profile, channel=opted_out.channel, body=body, verdict=gate.SendVerdict(
            allowed=False, refusal=OutboundMessage.Refusal.OPTED_OUT, reason=gate.opted_out_reason(opted_out))))

    typing_stop(profile=profile)
    reply = gate.is_reply(profile)
    error = ""
    number = profile.number if profile.number is not None and profile.number.kind == Channel.IMESSAGE else None
    if channel == Channel.SMS:
        fallback = OutboundMessage.Fallback.REQUESTED
    elif number is None or not number.active:
        fallback = OutboundMessage.Fallback.NOT_IMESSAGE
    elif _capable_of_imessage(profile) is False:
        fallback = OutboundMessage.Fallback.NOT_IMESSAGE
    elif (verdict := gate.send_check(profile=profile, number=number, channel=Channel.IMESSAGE, reply=reply)).refusal:
        return _result(_refuse(user=user, profile=profile, channel=Channel.IMESSAGE, number=number, body=body,
                               verdict=verdict))
    elif verdict.capped:
        fallback = OutboundMessage.Fallback.CAP
    else:
        try:
            provider_id = _try_imessage(profile, number, body)
        except linq.LinqError as exc:
            pool.cap_release(number=number)
            logger.info("iMessage send failed for profile %s, falling back to SMS: %s", profile.pk, exc)
            fallback = OutboundMessage.Fallback.IMESSAGE_FAILED
            error = str(exc)
        else:
            outbound = _record(user=user, profile=profile, number=number, channel=Channel.IMESSAGE,
                               status=OutboundMessage.Status.SENT, provider_id=provider_id, body=body)
            return _result(outbound)
    if fallback != OutboundMessage.Fallback.REQUESTED:
        pool.stat_add(number=number, field="fallbacks")
    return _result(_send_sms(user=user, profile=profile, number=number, body=body, fallback=fallback, error=error,
                             reply=reply))


def _refuse(*, user, profile: TextingProfile, channel: str, body: str, verdict: gate.SendVerdict,
            number: SendingNumber | None = None, fallback: str = "") -> OutboundMessage:
    """The gate said no: recorded, with the reason the agent is told."""
    return _record(user=user, profile=profile, number=number, channel=channel, status=OutboundMessage.Status.REFUSED,
                   refusal=verdict.refusal, fallback_reason=fallback, body=body, error=verdict.reason)


def _send_sms(*, user, profile: TextingProfile, number, body: str, fallback: str, error: str = "",
              reply: bool) -> OutboundMessage:
    line = _sms_line(profile)
    verdict = gate.send_check(profile=profile, number=line, channel=Channel.SMS, reply=reply) if line else None
    if verdict is not None and verdict.refusal:
        return _refuse(user=user, profile=profile, channel=Channel.SMS, number=line, body=body, verdict=verdict,
                       fallback=fallback)
    if line is None or verdict is None or not verdict.allowed:
        reason = "No SMS line has capacity left today."
        return _record(user=user, profile=profile, number=line or number, channel=Channel.SMS,
                       status=OutboundMessage.Status.FAILED, fallback_reason=fallback, body=body,
                       error="; ".join(filter(None, [error, reason])))
    try:
        sid = sms.send(from_phone=line.phone, to_phone=profile.phone, body=body)
    except sms.SmsError as exc:
        pool.cap_release(number=line)
        return _record(user=user, profile=profile, number=line, channel=Channel.SMS,
                       status=OutboundMessage.Status.FAILED, fallback_reason=fallback, body=body,
                       error="; ".join(filter(None, [error, str(exc)])))
    return _record(user=user, profile=profile, number=line, channel=Channel.SMS, status=OutboundMessage.Status.SENT,
                   fallback_reason=fallback, provider_id=sid, body=body, error=error)


def imessage_failed(*, provider_id: str, reason: str) -> OutboundMessage | None:
    """The provider accepted a message, then reported it undeliverable: send it again by SMS.
    The conditional update makes a repeated report a no-op."""
    outbound = OutboundMessage.objects.select_related("profile", "user", "number").filter(
        provider_id=provider_id, channel=Channel.IMESSAGE
    ).first()
    if outbound is None:
        return None
    flipped = OutboundMessage.objects.filter(pk=outbound.pk, status=OutboundMessage.Status.SENT).update(
        status=OutboundMessage.Status.FAILED, error=reason[:500]
    )
    if not flipped or outbound.profile is None:
        return None
    pool.stat_add(number=outbound.number, field="fallbacks")
    return _send_sms(user=outbound.user, profile=outbound.profile, number=outbound.number, body=outbound.body,
                     fallback=OutboundMessage.Fallback.IMESSAGE_FAILED, error=reason,
                     reply=gate.is_reply(outbound.profile))


def consent_notice_send(*, profile: TextingProfile, number: SendingNumber | None, channel: str, body: str) -> OutboundMessage:
    """The one confirmation of an opt-out or opt-in, from the line the keyword was texted to. It
    goes whatever the opt-out state (that is its point) and is recorded like any send. Raises
    LinqError or SmsError when the provider refused it (recorded as failed first)."""
    user = profile.user
    line = number if number is not None and number.active else (
        profile.number if channel == Channel.IMESSAGE else _sms_line(profile)
    )
    record = {"user": user, "profile": profile, "number": line, "channel": channel, "body": body, "consent_notice": True}
    try:
        if line is None:
            raise sms.SmsError("No line to send the confirmation from.")
        if line.kind == Channel.IMESSAGE:
            provider_id = _try_imessage(profile, line, body)
        else:
            provider_id = sms.send(from_phone=line.phone, to_phone=profile.phone, body=body)
    except (linq.LinqError, sms.SmsError) as exc:
        _record(**record, status=OutboundMessage.Status.FAILED, error=str(exc))
        raise
    pool.stat_add(number=line, field="sent")
    return _record(**record, status=OutboundMessage.Status.SENT, provider_id=provider_id)
