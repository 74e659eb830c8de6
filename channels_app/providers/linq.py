"""The managed iMessage API (shaped like Linq's partner API v3): bearer token, JSON over HTTPS;
its signed webhooks, and what they mean (`webhook_parse`)."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import time

import httpx
from django.conf import settings

from ..models import Channel
from .events import (
    Attachment,
    DeliveryFailed,
    Ignored,
    InboundEvent,
    MalformedEvent,
    Reaction,
    Webhook,
    obj,
    text,
)

SOURCE = "linq"


class LinqError(Exception):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def configured() -> bool:
    return bool(settings.LINQ_API_TOKEN and settings.LINQ_BASE_URL)


# Clients by (process, base URL, token, timeout); a handful at most (tests switch servers).
_CLIENTS: dict[tuple, httpx.Client] = {}
_MAX_CLIENTS = 4


def _client() -> httpx.Client:
    """The process's client for the configured provider, built once and reused (httpx clients
    are thread-safe). Building one loads the CA bundle into a new SSL context: tens to hundreds
    of milliseconds of CPU, which each typing bubble paid before its bundle reached the agent.
    Keyed by process id too, so a forked worker never shares its parent's connections."""
    key = (os.getpid(), settings.LINQ_BASE_URL.rstrip("/"), settings.LINQ_API_TOKEN, settings.LINQ_TIMEOUT)
    client = _CLIENTS.get(key)
    if client is None:
        while len(_CLIENTS) >= _MAX_CLIENTS:
            _CLIENTS.pop(next(iter(_CLIENTS))).close()
        client = _CLIENTS[key] = httpx.Client(
            base_url=key[1], headers={"Authorization": f"Bearer {key[2]}", "Accept": "application/json"},
            timeout=key[3],
        )
    return client


def warm() -> None:
    """Build this process's client now (a worker starting), when the provider is configured."""
    if configured():
        _client()


def _call(method: str, path: str, json: dict | None = None) -> dict:
    if not configured():
        raise LinqError("The iMessage provider is not configured (LINQ_API_TOKEN).")
    try:
        response = _client().request(method, path, json=json)
    except httpx.HTTPError as exc:
        raise LinqError(f"iMessage provider unreachable: {exc}") from exc
    if response.status_code >= 400:
        raise LinqError(f"iMessage provider answered {response.status_code}: {response.text[:300]}", response.status_code)
    if not response.content:
        return {}
    try:
        return response.json()
    except ValueError:
        return {}


def _text_message(body: str) -> dict:
    return {"parts": [{"type": "text", "value": body}]}


def chat_create(*, from_phone: str, to_phone: str, body: str) -> dict:
    """Creates the one-to-one chat and sends the first message. Returns {"chat_id", "message_id"}."""
    data = _call("POST", "/v3/chats", {"from": from_phone, "to": [to_phone], "message": _text_message(body)})
    chat = data.get("chat") or {}
    message = chat.get("message") or data.get("message") or {}
    chat_id = chat.get("id") or data.get("id") or ""
    if not chat_id:
        raise LinqError("iMessage provider created a chat without an id.")
    return {"chat_id": chat_id, "message_id": message.get("id", "")}


def message_send(*, chat_id: str, body: str) -> dict:
    data = _call("POST", f"/v3/chats/{chat_id}/messages", {"message": _text_message(body)})
    message = data.get("message") or data
    return {"chat_id": chat_id, "message_id": message.get("id", "")}


def typing_start(*, chat_id: str) -> None:
    _call("POST", f"/v3/chats/{chat_id}/typing")


def typing_stop(*, chat_id: str) -> None:
    _call("DELETE", f"/v3/chats/{chat_id}/typing")


def check_imessage(*, address: str) -> bool:
    data = _call("POST", "/v3/capability/check_imessage", {"address": address})
    return bool(data.get("available"))


_TIMESTAMP = re.compile(r"[0-9]{1,13}(\.[0-9]{1,6})?")
_HEX_DIGEST = re.compile(r"[0-9a-fA-F]{64}")


def signature_for(secret: str, timestamp: str, raw_body: bytes) -> str:
    message = timestamp.encode() + b"." + raw_body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify_webhook(*, raw_body: bytes, timestamp: str | None, signature: str | None, now: float | None = None) -> bool:
    secret = settings.LINQ_WEBHOOK_SECRET
    if not secret or not timestamp or not signature:
        return False
    # Only the shapes the sender produces: ASCII digits (seconds or milliseconds) and a hex digest.
    # float() would also read "nan" (which passes any age check), "1e400" or non-ASCII digits, and
    # compare_digest raises on non-ASCII text: each of those was a 500 or a hole, now a plain no.
    if not _TIMESTAMP.fullmatch(timestamp):
        return False
    digest = signature.strip().removeprefix("sha256=")
    if not _HEX_DIGEST.fullmatch(digest):
        return False
    sent_at = float(timestamp)
    if sent_at > 1e12:  # milliseconds
        sent_at /= 1000
    if abs((now or time.time()) - sent_at) > settings.WEBHOOK_MAX_AGE_SECONDS:
        return False
    expected = signature_for(secret, timestamp, raw_body)
    return hmac.compare_digest(expected, digest.lower())


# --- Webhook payloads -----------------------------------------------------------------------------

def webhook_parse(payload: dict) -> Webhook:
    """One verified webhook body, read into a typed event. Raises MalformedEvent."""
    if not isinstance(payload, dict):
        raise MalformedEvent("the body must be a JSON object")
    event_id = text(payload.get("event_id") or "", "event_id")
    event_type = text(payload.get("event_type") or "", "event_type")
    data = payload.get("data") or {}
    if not event_id or not isinstance(data, dict):
        raise MalformedEvent("event_id and data are required")
    event: InboundEvent | DeliveryFailed | Ignored
    if event_type == "message.received":
        event = _message_received(event_id, data)
    elif event_type == "reaction.added":
        event = _reaction_added(event_id, data)
    elif event_type == "message.failed":
        event = DeliveryFailed(
            message_id=text(data.get("message_id") or "", "data.message_id"),
            reason=f"delivery failed: {data.get('reason') or data.get('code') or ''}",
        )
    else:
        event = Ignored(f"event type {event_type!r} is not handled")
    return Webhook(source=SOURCE, event_id=event_id, event_type=event_type, event=event)


def _message_received(event_id: str, data: dict) -> InboundEvent | Ignored:
    if data.get("direction", "inbound") != "inbound":
        return Ignored("a message we sent")
    chat = obj(data, "chat", "data")
    if chat.get("is_group"):
        return Ignored("a group chat")
    parts = data.get("parts") or []
    if not isinstance(parts, list):
        raise MalformedEvent("data.parts must be a list")
    body = "\n".join(
        text(p.get("value", ""), f"data.parts[{i}].value")
        for i, p in enumerate(parts) if isinstance(p, dict) and p.get("type") in ("text", "link")
    )
    media = tuple(
        _attachment(p, f"data.parts[{i}]") for i, p in enumerate(parts) if isinstance(p, dict) and p.get("type") == "media"
    )
    service = text(data.get("service") or "iMessage", "data.service")
    return InboundEvent(
        channel=Channel.IMESSAGE if service.lower() == "imessage" else Channel.SMS,
        provider_id=event_id,
        from_phone=text(obj(data, "sender_handle", "data").get("handle", ""), "data.sender_handle.handle"),
        to_phone=text(obj(chat, "owner_handle", "data.chat").get("handle", ""), "data.chat.owner_handle.handle"),
        text=body,
        attachments=media,
        chat_id=text(chat.get("id", ""), "data.chat.id"),
        # Recovered by the provider's reconciliation: late and out of order, so it is history.
        history=bool(data.get("reconciled_at")),
    )


def _attachment(part: dict, where: str) -> Attachment:
    try:
        size = int(part.get("size_bytes") or 0)
    except (TypeError, ValueError):
        raise MalformedEvent(f"{where}.size_bytes must be an integer") from None
    return Attachment(
        id=text(part.get("id", ""), f"{where}.id"),
        filename=text(part.get("filename") or "", f"{where}.filename"),
        mime_type=text(part.get("mime_type", ""), f"{where}.mime_type"),
        size_bytes=size,
        url=text(part.get("url", ""), f"{where}.url"),
    )


def _reaction_added(event_id: str, data: dict) -> InboundEvent | Ignored:
    if data.get("is_from_me"):
        return Ignored("a reaction we sent")
    sender = obj(data, "from_handle", "data").get("handle") or data.get("from", "")
    return InboundEvent(
        channel=Channel.IMESSAGE,
        provider_id=event_id,
        from_phone=text(sender, "data.from_handle.handle"),
        # The webhook does not name the line: it is the one the sender's thread is on (the service knows).
        to_phone="",
        reaction=Reaction(
            type=text(data.get("reaction_type", ""), "data.reaction_type"),
            emoji=text(data.get("custom_emoji") or "", "data.custom_emoji"),
            message_id=text(data.get("message_id", ""), "data.message_id"),
        ),
        chat_id=text(data.get("chat_id", ""), "data.chat_id"),
    )
