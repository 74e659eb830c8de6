"""Inbound texts are stored the moment they arrive (before anything else happens to them), and
each one (re)starts its conversation's debounce window. Attachments are copied off the
provider's expiring URL."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path

import httpx
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import get_valid_filename

from ..models import (
    Channel,
    Conversation,
    InboundAttachment,
    InboundMessage,
    SendingNumber,
    TextingProfile,
)
from ..providers.events import Attachment
from . import consent, pool, queue

logger = logging.getLogger(__name__)


def safe_phone(value: str) -> str:
    """The E.164 form when the value is a phone number, else the raw value (cut to fit)."""
    try:
        return pool.phone_normalize(value)
    except ValueError:
        return (value or "")[:20]


def inbound_store(
    *, channel: str, provider_id: str, from_phone: str, to_phone: str, text: str = "",
    attachments: Sequence[Attachment] | None = None, reaction: dict | None = None, chat_id: str = "",
    received_at=None, history: bool = False,
) -> InboundMessage | None:
    """Store one inbound message and (re)start its conversation's debounce window.
    `history`: a late, reconciled message: kept, never answered.
    Returns None for a duplicate (already stored under the same provider id)."""
    now = timezone.now()
    from_phone, to_phone = safe_phone(from_phone), safe_phone(to_phone)
    with transaction.atomic():
        number = SendingNumber.objects.filter(phone=to_phone).first()
        profile = TextingProfile.objects.select_for_update().filter(phone=from_phone).first()
        try:
            with transaction.atomic():
                message = InboundMessage.objects.create(
                    channel=channel, provider_id=provider_id, from_phone=from_phone, number=number, profile=profile,
                    text=text, reaction=reaction, received_at=received_at or now,
                )
        except IntegrityError:
            return None
        for part in attachments or ():
            InboundAttachment.objects.create(
                message=message, provider_id=part.id[:100],
                filename=get_valid_filename(part.filename or "attachment")[:255],
                mime_type=part.mime_type[:100], size_bytes=part.size_bytes, source_url=part.url,
            )
        pool.stat_add(number=number, field="received")
        # STOP, START...: kept like any message, answered by the system (one confirmation), not the agent.
        keyword = consent.keyword_of(text) if not attachments and reaction is None and not history else None
        if keyword is not None:
            consent.consent_keyword_apply(message=message, direction=keyword[0], keyword=keyword[1])
        if profile is None:
            logger.info("Inbound %s from a phone no user registered; stored, not dispatched", message.pk)
            return message
        _profile_learn(profile, channel=channel, number=number, chat_id=chat_id, now=now)
        if history or keyword is not None:
            return message
        conversation, _ = Conversation.objects.select_for_update().get_or_create(profile=profile)
        deadline = now + timedelta(seconds=settings.CHANNELS_DEBOUNCE_SECONDS)
        Conversation.objects.filter(pk=conversation.pk).update(
            deadline=deadline, version=F("version") + 1, channel=channel
        )
        InboundMessage.objects.filter(pk=message.pk).update(conversation=conversation)
        conversation_id = conversation.pk
        # Read back after our write: we hold the row (or, on SQLite, the database) now.
        version = Conversation.objects.values_list("version", flat=True).get(pk=conversation_id)
        attachment_ids = list(message.attachments.values_list("pk", flat=True))
        # The check is due at the deadline itself, not a window after the commit: the time this
        # transaction took (a loaded web process: tenths of a second) is not added to the wait.
        transaction.on_commit(lambda: queue.task_send_or_log(
            queue.DEBOUNCE_FIRE, conversation_id, version, countdown=_seconds_until(deadline)
        ))
        for attachment_id in attachment_ids:
            transaction.on_commit(partial(queue.task_send_or_log, queue.ATTACHMENT_STORE, attachment_id))
    return message


def _seconds_until(moment) -> float:
    return max(0.0, (moment - timezone.now()).total_seconds())


def _profile_learn(profile: TextingProfile, *, channel: str, number, chat_id: str, now) -> None:
    """Users text first: the first text opens the thread, and the line they texted is theirs."""
    changes = {}
    if profile.first_texted_at is None:
        changes["first_texted_at"] = now
    if number is not None and number.kind == Channel.IMESSAGE and (
        profile.number_id is None or (profile.first_texted_at is None and profile.number_id != number.pk)
    ):
        changes["number"] = number
    if number is not None and number.kind == Channel.SMS and profile.sms_number_id is None:
        changes["sms_number"] = number
    if channel == Channel.IMESSAGE:
        changes.update(imessage_capable=True, capability_checked_at=now)
        if chat_id and profile.chat_id != chat_id:
            changes["chat_id"] = chat_id
    for field, value in changes.items():
        setattr(profile, field, value)
    if changes:
        profile.save(update_fields=list(changes))


def attachment_store(*, attachment_id: int) -> bool:
    """Keep our own copy of an attachment: the provider's URL expires within the hour."""
    attachment = InboundAttachment.objects.filter(pk=attachment_id).first()
    if attachment is None or attachment.stored_at:
        return False
    root = Path(settings.CHANNELS_MEDIA_ROOT)
    relative = Path(str(attachment.message_id)) / f"{attachment.pk}-{attachment.filename or 'attachment'}"
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with httpx.stream("GET", attachment.source_url, timeout=30, follow_redirects=True) as response:
        response.raise_for_status()
        with open(target, "wb") as handle:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > settings.CHANNELS_MAX_ATTACHMENT_BYTES:
                    handle.close()
                    target.unlink(missing_ok=True)
                    raise ValueError("attachment larger than CHANNELS_MAX_ATTACHMENT_BYTES")
                handle.write(chunk)
    InboundAttachment.objects.filter(pk=attachment.pk).update(
        stored_path=str(relative), stored_at=timezone.now(), size_bytes=size
    )
    return True
