"""The managed iMessage API (shaped like Linq's partner API v3): bearer token, JSON over HTTPS."""

from __future__ import annotations

import hashlib
import hmac
import time

import httpx
from django.conf import settings


class LinqError(Exception):
    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def configured() -> bool:
    return bool(settings.LINQ_API_TOKEN and settings.LINQ_BASE_URL)


def _client() -> httpx.Client:
    return httpx.Client(
        base_url=settings.LINQ_BASE_URL.rstrip("/"),
        headers={"Authorization": f"Bearer {settings.LINQ_API_TOKEN}", "Accept": "application/json"},
        timeout=settings.LINQ_TIMEOUT,
    )


def _call(method: str, path: str, json: dict | None = None) -> dict:
    if not configured():
        raise LinqError("The iMessage provider is not configured (LINQ_API_TOKEN).")
    try:
        with _client() as client:
            response = client.request(method, path, json=json)
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


def signature_for(secret: str, timestamp: str, raw_body: bytes) -> str:
    message = timestamp.encode() + b"." + raw_body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify_webhook(*, raw_body: bytes, timestamp: str | None, signature: str | None, now: float | None = None) -> bool:
    secret = settings.LINQ_WEBHOOK_SECRET
    if not secret or not timestamp or not signature:
        return False
    try:
        sent_at = float(timestamp)
    except ValueError:
        return False
    if sent_at > 1e12:  # milliseconds
        sent_at /= 1000
    if abs((now or time.time()) - sent_at) > settings.WEBHOOK_MAX_AGE_SECONDS:
        return False
    expected = signature_for(secret, timestamp, raw_body)
    return hmac.compare_digest(expected, signature.strip().removeprefix("sha256="))
