"""The demo's Gmail: a local HTTP server answering the Gmail API calls the product makes when it
reads mail (google_workspace.client.GoogleClient: messages.list with `q=after:` and pageToken,
messages.get and threads.get, format=full), one mailbox per access token.

Only drafting's demo (drafting.demo) uses it: the product's own code reads the demo's email from
it exactly as it reads Gmail. It holds what the simulated people received and sent; it never
decides anything. Product code cannot import the test suite's fakes, hence this small one."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from django.test.utils import override_settings

PAGE_SIZE = 100
_PREFIX = "/gmail/v1/users/me/"


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@dataclass
class Mailbox:
    """One person's Gmail: messages by id, in Gmail's `format=full` shape."""

    address: str
    messages: dict[str, dict] = field(default_factory=dict)

    def add(self, *, message_id: str, thread_id: str, at_ms: int, sender: str, to: str, subject: str, body: str,
            labels: tuple[str, ...], headers: dict[str, str] | None = None) -> dict:
        all_headers = {"From": sender, "To": to, "Subject": subject, **(headers or {})}
        self.messages[message_id] = {
            "id": message_id, "threadId": thread_id, "labelIds": list(labels), "snippet": body[:100],
            "internalDate": str(at_ms), "sizeEstimate": len(body) + 200,
            "payload": {"mimeType": "text/plain", "headers": [{"name": k, "value": v} for k, v in all_headers.items()],
                        "body": {"size": len(body), "data": _b64(body)}},
        }
        return self.messages[message_id]

    def listing(self, query: dict[str, str]) -> dict:
        after = re.search(r"after:(\d+)", query.get("q", ""))
        after_s = int(after.group(1)) if after else None
        # Newest first, like Gmail; `after:` compares whole seconds. Drafts are not listed.
        found = sorted((m for m in self.messages.values() if "DRAFT" not in m["labelIds"]
                        and (after_s is None or int(m["internalDate"]) // 1000 >= after_s)),
                       key=lambda m: (-int(m["internalDate"]), m["id"]))
        start = int(query.get("pageToken") or 0)
        size = min(int(query.get("maxResults") or PAGE_SIZE), PAGE_SIZE)
        page = found[start:start + size]
        body: dict = {"resultSizeEstimate": len(found)}
        if page:
            body["messages"] = [{"id": m["id"], "threadId": m["threadId"]} for m in page]
        if start + size < len(found):
            body["nextPageToken"] = str(start + size)
        return body

    def thread(self, thread_id: str) -> dict | None:
        messages = sorted((m for m in self.messages.values() if m["threadId"] == thread_id),
                          key=lambda m: int(m["internalDate"]))
        return {"id": thread_id, "messages": messages} if messages else None


class _Handler(BaseHTTPRequestHandler):
    mailboxes: dict[str, Mailbox] = {}  # access token -> mailbox (a class of its own per server)

    def log_message(self, format, *args):  # noqa: A002 - http.server's name
        pass

    def _answer(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        parts = urlsplit(self.path)
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        mailbox = self.mailboxes.get(token)
        if mailbox is None:
            return self._answer(401, {"error": {"code": 401, "status": "UNAUTHENTICATED",
                                                "message": "Request had invalid authentication credentials."}})
        path = parts.path.removeprefix(_PREFIX)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        found: dict | None = None
        if path == "messages":
            found = mailbox.listing(query)
        elif path.startswith("messages/"):
            found = mailbox.messages.get(path.split("/", 1)[1])
        elif path.startswith("threads/"):
            found = mailbox.thread(path.split("/", 1)[1])
        if found is None:
            return self._answer(404, {"error": {"code": 404, "status": "NOT_FOUND",
                                                "message": "Requested entity was not found."}})
        return self._answer(200, found)


@contextmanager
def serving(mailboxes: dict[str, Mailbox]) -> Iterator[str]:
    """Serve `mailboxes` (access token -> Mailbox) on a local port while the block runs, with
    settings.GMAIL_API_BASE_URL pointing at it. Yields the base URL."""
    handler = type("DemoGmail", (_Handler,), {"mailboxes": mailboxes})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with override_settings(GMAIL_API_BASE_URL=url):
            yield url
    finally:
        server.shutdown()
        server.server_close()
