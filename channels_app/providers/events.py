"""What a provider's webhook means, once parsed: typed events the inbound services act on.

Parsers (`linq.webhook_parse`, `sms.webhook_parse`) read nothing from the database and write
nothing; a payload they cannot read raises `MalformedEvent` (a ValueError, so the webhook answers
400 and changes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass


class MalformedEvent(ValueError):
    """The payload is not shaped the way the provider documents it."""


@dataclass(frozen=True)
class Attachment:
    """A file a person sent, still at the provider (its URL expires)."""

    id: str
    filename: str
    mime_type: str
    size_bytes: int
    url: str


@dataclass(frozen=True)
class Reaction:
    """A tapback on one of our messages."""

    type: str
    emoji: str
    message_id: str


@dataclass(frozen=True)
class InboundEvent:
    """A message (or a reaction) a person sent to one of our lines."""

    channel: str  # Channel.IMESSAGE or Channel.SMS
    provider_id: str  # de-duplicates the stored message
    from_phone: str
    to_phone: str = ""  # empty when the provider does not say (a Linq reaction): the sender's line
    text: str = ""
    attachments: tuple[Attachment, ...] = ()
    reaction: Reaction | None = None
    chat_id: str = ""
    history: bool = False  # late and reconciled: kept, never answered


@dataclass(frozen=True)
class DeliveryFailed:
    """One of our outbound messages could not be delivered."""

    message_id: str
    reason: str


@dataclass(frozen=True)
class Ignored:
    """A well-formed event we have nothing to do with (our own messages, group chats...)."""

    reason: str


@dataclass(frozen=True)
class Webhook:
    """One provider delivery: its id (for de-duplication) and what it means."""

    source: str  # "linq" or "twilio": the namespace of event_id
    event_id: str
    event_type: str
    event: InboundEvent | DeliveryFailed | Ignored


def obj(container: dict, key: str, where: str) -> dict:
    """`container[key]` as a dict ({} when absent or null); anything else is malformed."""
    value = container.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedEvent(f"{where}.{key} must be an object")
    return value


def text(value, where: str) -> str:
    """A string field ("" when absent or null); numbers are accepted as their text."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise MalformedEvent(f"{where} must be a string")
    return str(value)
