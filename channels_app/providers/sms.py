"""SMS through Twilio's own client, pointed at a configurable host for tests and proxies; its
signed inbound webhooks, and what they mean (`webhook_parse`)."""

from __future__ import annotations

import re

from django.conf import settings
from twilio.base.exceptions import TwilioException
from twilio.http.http_client import TwilioHttpClient
from twilio.request_validator import RequestValidator
from twilio.rest import Client

from ..models import Channel
from .events import Attachment, InboundEvent, MalformedEvent, Webhook, text

SOURCE = "twilio"
MAX_MEDIA = 10


class SmsError(Exception):
    pass


class _BaseUrlHttpClient(TwilioHttpClient):
    """Twilio's client builds absolute https://api.twilio.com URLs; rewrite the origin."""

    def __init__(self, base_url: str, **kwargs):
        super().__init__(**kwargs)
        self.base_url = base_url.rstrip("/")

    def request(self, method, url, *args, **kwargs):
        if self.base_url and url.startswith("https://"):
            path = url.split("/", 3)[3] if url.count("/") >= 3 else ""
            url = f"{self.base_url}/{path}"
        return super().request(method, url, *args, **kwargs)


def configured() -> bool:
    return bool(settings.TWILIO_ACCOUNT_SID and settings.TWILIO_AUTH_TOKEN)


def client() -> Client:
    http_client = _BaseUrlHttpClient(settings.TWILIO_API_BASE_URL, timeout=10) if settings.TWILIO_API_BASE_URL else None
    return Client(settings.TWILIO_ACCOUNT_SID, settings.TWILIO_AUTH_TOKEN, http_client=http_client)


def send(*, from_phone: str, to_phone: str, body: str) -> str:
    """Returns the message SID."""
    if not configured():
        raise SmsError("SMS is not configured (TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN).")
    try:
        message = client().messages.create(to=to_phone, from_=from_phone, body=body)
    except TwilioException as exc:
        raise SmsError(f"Twilio refused the message: {exc}") from exc
    except Exception as exc:  # network errors surface as requests exceptions
        raise SmsError(f"Twilio unreachable: {exc}") from exc
    return message.sid


# What Twilio sends: the base64 of an HMAC-SHA1 (20 bytes, so 27 characters and one "="). Anything
# else (empty, non-ASCII, not base64, another length) is a plain no before the validator sees it.
_SIGNATURE = re.compile(r"[A-Za-z0-9+/]{27}=")


def verify_webhook(*, url: str, params: dict, signature: str | None) -> bool:
    if not settings.TWILIO_AUTH_TOKEN or not signature or not _SIGNATURE.fullmatch(signature):
        return False
    return RequestValidator(settings.TWILIO_AUTH_TOKEN).validate(url, params, signature)


def webhook_parse(params: dict) -> Webhook:
    """The form fields of one verified inbound-SMS webhook, read into a typed event.
    Raises MalformedEvent."""
    sid = text(params.get("MessageSid") or params.get("SmsSid") or "", "MessageSid")
    if not sid:
        raise MalformedEvent("MessageSid is required")
    try:
        count = min(int(params.get("NumMedia") or 0), MAX_MEDIA)
    except ValueError:
        count = 0
    media = tuple(
        Attachment(
            id=f"{sid}-{i}", filename=f"media-{i}", mime_type=text(params.get(f"MediaContentType{i}", ""), "MediaContentType"),
            size_bytes=0, url=text(params.get(f"MediaUrl{i}", ""), "MediaUrl"),
        )
        for i in range(count) if params.get(f"MediaUrl{i}")
    )
    event = InboundEvent(
        channel=Channel.SMS, provider_id=sid, from_phone=text(params.get("From", ""), "From"),
        to_phone=text(params.get("To", ""), "To"), text=text(params.get("Body") or "", "Body"), attachments=media,
    )
    return Webhook(source=SOURCE, event_id=sid, event_type="sms.received", event=event)
