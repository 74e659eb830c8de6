"""The demo's messaging providers: a local HTTP server that answers like the managed iMessage API
(Linq partner API v3) and Twilio's Messages API, so the demo's replies go out through the
product's real clients (httpx and twilio-python) with nothing leaving the machine, and inbound
texts come in through the product's webhooks, signed the way each provider signs them."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count

from django.test.utils import override_settings
from twilio.request_validator import RequestValidator

from .providers import linq

LINQ_TOKEN = "demo-linq-token"
LINQ_SECRET = "demo-linq-webhook-secret"
TWILIO_SID = "AC" + "d" * 32
TWILIO_TOKEN = "demo-twilio-auth-token"
SMS_WEBHOOK_BASE = "https://lindy.demo"


class _Provider(BaseHTTPRequestHandler):
    ids = count(1)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _answer(self, status: int, body: dict | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self):  # noqa: N802 - http.server's name
        raw = self._body()
        number = next(self.ids)
        if self.path.startswith("/v3/") and self.headers.get("Authorization") != f"Bearer {LINQ_TOKEN}":
            return self._answer(401, {"error": "unauthorized"})
        if self.path == "/v3/chats":
            chat = "chat-" + hashlib.sha1(raw).hexdigest()[:12]
            return self._answer(201, {"chat": {"id": chat, "message": {"id": f"msg-{number}"}}})
        if self.path.startswith("/v3/chats/") and self.path.endswith("/messages"):
            return self._answer(202, {"message": {"id": f"msg-{number}"}})
        if self.path.endswith("/typing") or self.path.endswith("/read"):
            return self._answer(204)
        if self.path == "/v3/capability/check_imessage":
            return self._answer(200, {"available": True})
        if self.path.endswith("/Messages.json"):
            return self._answer(201, {"sid": f"SM{number:032d}", "status": "queued", "body": "", "num_segments": "1"})
        return self._answer(404, {"error": "not found"})

    def do_DELETE(self):  # noqa: N802
        return self._answer(204)


@contextmanager
def providers() -> Iterator[None]:
    """The fake providers on a free local port, and the settings that point the product at them."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with override_settings(LINQ_API_TOKEN=LINQ_TOKEN, LINQ_BASE_URL=url, LINQ_WEBHOOK_SECRET=LINQ_SECRET,
                               LINQ_WEBHOOK_SCHEME="hmac", TWILIO_ACCOUNT_SID=TWILIO_SID,
                               TWILIO_AUTH_TOKEN=TWILIO_TOKEN, TWILIO_API_BASE_URL=url,
                               TWILIO_WEBHOOK_PUBLIC_BASE=SMS_WEBHOOK_BASE):
            yield
    finally:
        server.shutdown()
        server.server_close()


def linq_headers(raw_body: bytes) -> dict[str, str]:
    """The headers the iMessage provider signs a webhook with (X-Webhook-Timestamp/-Signature)."""
    timestamp = str(int(time.time()))
    return {"HTTP_X_WEBHOOK_TIMESTAMP": timestamp,
            "HTTP_X_WEBHOOK_SIGNATURE": linq.signature_for(LINQ_SECRET, timestamp, raw_body)}


def twilio_signature(path: str, params: dict[str, str]) -> str:
    """Twilio's X-Twilio-Signature for a form POST to the public URL of `path`."""
    return RequestValidator(TWILIO_TOKEN).compute_signature(SMS_WEBHOOK_BASE + path, params)
