"""A local server speaking the managed iMessage API (Linq partner API v3 shapes), and signed
webhooks the way the provider sends them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid

from tests.fakes.http import Reply
from tests.fakes.routes import PatternFakeServer

TOKEN = "linq-test-token"
WEBHOOK_SECRET = "linq-webhook-secret"
# A Standard Webhooks secret: "whsec_" and the base64 of the key bytes.
STANDARD_SECRET = "whsec_" + base64.b64encode(b"linq-standard-webhooks-key-32byte").decode()


class FakeLinq(PatternFakeServer):
    def __init__(self):
        super().__init__()
        self.imessage_capable: set[str] = set()
        self.fail_sends = False
        self.chats: dict[str, dict] = {}
        self.route("POST", r"/v3/chats", self._create_chat)
        self.route("POST", r"/v3/chats/([^/]+)/messages", self._send)
        self.route("POST", r"/v3/chats/([^/]+)/typing", lambda r, m: Reply(204, b""))
        self.route("DELETE", r"/v3/chats/([^/]+)/typing", lambda r, m: Reply(204, b""))
        self.route("POST", r"/v3/capability/check_imessage", self._capability)

    def settings(self) -> dict:
        return {"LINQ_BASE_URL": self.url, "LINQ_API_TOKEN": TOKEN, "LINQ_WEBHOOK_SECRET": WEBHOOK_SECRET}

    def _authorized(self, recorded) -> bool:
        return recorded.headers.get("authorization") == f"Bearer {TOKEN}"

    def _create_chat(self, recorded, match):
        if not self._authorized(recorded):
            return Reply(401, {"error": {"code": 1001, "message": "unauthorized"}})
        if self.fail_sends:
            return Reply(500, {"error": {"message": "line unavailable"}})
        body = recorded.json
        chat_id = str(uuid.uuid4())
        message_id = str(uuid.uuid4())
        self.chats[chat_id] = {"from": body["from"], "to": body["to"]}
        return Reply(201, {"chat": {
            "id": chat_id, "is_group": False, "service": "iMessage",
            "handles": [{"handle": body["from"], "is_me": True}] + [{"handle": h, "is_me": False} for h in body["to"]],
            "message": {"id": message_id, "parts": body["message"]["parts"], "delivery_status": "pending"},
        }})

    def _send(self, recorded, match):
        if not self._authorized(recorded):
            return Reply(401, {"error": {"code": 1001, "message": "unauthorized"}})
        if self.fail_sends:
            return Reply(500, {"error": {"message": "line unavailable"}})
        return Reply(202, {"chat_id": match.group(1), "message": {
            "id": str(uuid.uuid4()), "parts": recorded.json["message"]["parts"], "delivery_status": "pending",
        }})

    def _capability(self, recorded, match):
        address = recorded.json.get("address")
        return Reply(200, {"address": address, "available": address in self.imessage_capable})

    def sends(self) -> list:
        return [r for r in self.requests if r.method == "POST" and (r.path == "/v3/chats" or r.path.endswith("/messages"))]

    def typing(self, method: str = "POST") -> list:
        return [r for r in self.requests if r.method == method and r.path.endswith("/typing")]


def sign(body: bytes, timestamp: str, secret: str = WEBHOOK_SECRET) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signed(payload: dict, *, secret: str = WEBHOOK_SECRET, timestamp: int | None = None) -> tuple[bytes, dict]:
    body = json.dumps(payload).encode()
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return body, {"HTTP_X_WEBHOOK_TIMESTAMP": ts, "HTTP_X_WEBHOOK_SIGNATURE": sign(body, ts, secret)}


def standard_signature(msg_id: str, timestamp: str, body: bytes, secret: str = STANDARD_SECRET) -> str:
    """Standard Webhooks, written from the spec (not with the library the product verifies with):
    base64 HMAC-SHA256, keyed with the secret's base64-decoded bytes, of "{id}.{timestamp}.{body}"."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_standard(payload: dict, *, secret: str = STANDARD_SECRET, timestamp: int | None = None,
                    msg_id: str | None = None) -> tuple[bytes, dict]:
    """A delivery signed with the Standard Webhooks scheme, as Django test client headers."""
    body = json.dumps(payload).encode()
    ts = str(int(time.time()) if timestamp is None else timestamp)
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    return body, {"HTTP_WEBHOOK_ID": msg_id, "HTTP_WEBHOOK_TIMESTAMP": ts,
                  "HTTP_WEBHOOK_SIGNATURE": standard_signature(msg_id, ts, body, secret)}


def _envelope(event_type: str, data: dict, event_id: str | None = None) -> dict:
    return {
        "api_version": "v3", "webhook_version": "2026-02-03", "event_type": event_type,
        "event_id": event_id or str(uuid.uuid4()), "created_at": "2026-11-29T12:00:00Z",
        "partner_id": "partner-test", "trace_id": str(uuid.uuid4()), "data": data,
    }


def message_received(*, sender: str, line: str, text: str = "", chat_id: str = "chat-1", event_id: str | None = None,
                     media: list[dict] | None = None, service: str = "iMessage") -> dict:
    parts = ([{"type": "text", "value": text}] if text else []) + (media or [])
    return _envelope("message.received", {
        "id": str(uuid.uuid4()), "direction": "inbound", "service": service, "parts": parts,
        "sender_handle": {"handle": sender, "is_me": False, "service": service},
        "chat": {"id": chat_id, "is_group": False, "owner_handle": {"handle": line, "is_me": True},
                 "health_status": {"status": "HEALTHY", "doc_url": "", "updated_at": "2026-11-29T12:00:00Z"}},
        "sent_at": "2026-11-29T12:00:00Z", "delivered_at": None, "read_at": None,
    }, event_id)


def reaction_added(*, sender: str, chat_id: str = "chat-1", reaction_type: str = "like", message_id: str = "m-1",
                   event_id: str | None = None) -> dict:
    return _envelope("reaction.added", {
        "is_from_me": False, "reaction_type": reaction_type, "chat_id": chat_id, "custom_emoji": None,
        "from_handle": {"handle": sender, "is_me": False}, "message_id": message_id, "part_index": 0,
        "reacted_at": "2026-11-29T12:00:01Z", "service": "iMessage",
    }, event_id)
