"""Replies to a user in their one-to-one thread: iMessage first, SMS when that cannot or may not
go; the typing bubble. These replies are exempt from the action validator (the user's own chat),
which is why this module refuses anyone who has not texted in first."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from ..models import Channel, Conversation, OutboundMessage, SendingNumber, TextingProfile
from ..providers import linq, sms
from . import pool

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
        outbound = _record(user=user, profile=profile, status=OutboundMessage.Status.REFUSED, body=body, error=reason)
        return _result(outbound, reason)

    typing_stop(profile=profile)
    error = ""
    number = profile.number if profile.number is not None and profile.number.kind == Channel.IMESSAGE else None
    if channel == Channel.SMS:
        fallback = OutboundMessage.Fallback.REQUESTED
    elif number is None or not number.active:
        fallback = OutboundMessage.Fallback.NOT_IMESSAGE
    elif _capable_of_imessage(profile) is False:
        fallback = OutboundMessage.Fallback.NOT_IMESSAGE
    elif not pool.cap_reserve(number=number):
        pool.stat_add(number=number, field="capped")
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
    return _result(_send_sms(user=user, profile=profile, number=number, body=body, fallback=fallback, error=error))


def _send_sms(*, user, profile: TextingProfile, number, body: str, fallback: str, error: str = "") -> OutboundMessage:
    line = _sms_line(profile)
    if line is None or not pool.cap_reserve(number=line):
        if line is not None:
            pool.stat_add(number=line, field="capped")
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
                     fallback=OutboundMessage.Fallback.IMESSAGE_FAILED, error=reason)
