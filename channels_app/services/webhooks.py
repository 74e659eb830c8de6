"""Provider webhooks in: each delivery is claimed once by its event id, parsed by its provider
module into a typed event (channels_app.providers), and acted on: a message or reaction is
stored (store.inbound_store), a delivery failure recorded on the outbound message."""

from __future__ import annotations

from dataclasses import asdict, replace

from django.db import IntegrityError, transaction

from ..models import TextingProfile, WebhookEvent
from ..providers import linq, sms
from ..providers.events import DeliveryFailed, InboundEvent, Webhook
from . import outbound
from .store import inbound_store, safe_phone


def webhook_event_claim(*, source: str, event_id: str, event_type: str = "") -> bool:
    """True the first time an event id is seen; a provider's retry gets False."""
    try:
        with transaction.atomic():
            WebhookEvent.objects.create(source=source, event_id=event_id, event_type=event_type[:60])
    except IntegrityError:
        return False
    return True


def inbound_event_store(*, event: InboundEvent):
    """Store a parsed inbound event. Returns the message, or None for a duplicate."""
    return inbound_store(
        channel=event.channel, provider_id=event.provider_id, from_phone=event.from_phone, to_phone=event.to_phone,
        text=event.text, attachments=event.attachments, reaction=asdict(event.reaction) if event.reaction else None,
        chat_id=event.chat_id, history=event.history,
    )


def _webhook_process(webhook: Webhook) -> str:
    if not webhook_event_claim(source=webhook.source, event_id=webhook.event_id, event_type=webhook.event_type):
        return "duplicate"
    event = webhook.event
    if isinstance(event, DeliveryFailed):
        if event.message_id:
            outbound.imessage_failed(provider_id=event.message_id, reason=event.reason)
        return "recorded"
    if not isinstance(event, InboundEvent):
        return "ignored"
    if not event.to_phone and event.reaction is not None:
        # A reaction does not name the line: it came in on the one the sender's thread is on.
        profile = TextingProfile.objects.filter(phone=safe_phone(event.from_phone)).select_related("number").first()
        if profile and profile.number is not None:
            event = replace(event, to_phone=profile.number.phone)
    inbound_event_store(event=event)
    return "stored"


@transaction.atomic
def linq_event_process(*, payload: dict) -> str:
    """One verified webhook from the managed iMessage API. Returns what happened: "stored",
    "recorded", "ignored" or "duplicate". Raises MalformedEvent (a ValueError) on a bad payload."""
    return _webhook_process(linq.webhook_parse(payload))


@transaction.atomic
def twilio_inbound_process(*, params: dict) -> str:
    """One verified inbound-SMS webhook from Twilio. Returns "stored" or "duplicate"."""
    return _webhook_process(sms.webhook_parse(params))
