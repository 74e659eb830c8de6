"""Demo scores: the analyst scores the demo's finished agent tasks with the product's own code (the
offline rules without a model key). The scripted vendor payment is a rogue pattern: it becomes a
candidate eval case for a reviewer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from django.test.utils import override_settings
from django.utils import timezone

from lindy.models import AgentTask

from . import services


def seed(ctx) -> None:
    for task_id in AgentTask.objects.filter(team__in=list(ctx.teams.values())).order_by("pk").values_list("pk", flat=True):
        services.task_score(task_id=task_id)


# --- Failures -----------------------------------------------------------------------------------
# The demo's failure groups come from running the product on inputs that really break it: demo users
# connect Gmail to a local server that answers like a misbehaving Gmail API (messages.get returns a
# malformed message), and the product's own hydration runs read it. The Gmail source raises inside
# the product's parsing, the pipeline captures the failure with the run's own log and goes on with
# the other sources (the run itself ends without a failure), and the analyst triages the groups.
# Afterwards each account is left disconnected, saying why: nothing here stays "connected" to a fake.

MALFORMED = {
    # Headers as "Name: value" strings instead of {"name", "value"} objects.
    "m-headers": {"id": "m-headers", "internalDate": "1700000000000",
                  "payload": {"mimeType": "text/plain", "headers": ["From: billing@northwind.test", "Subject: Invoice"],
                              "body": {"data": "SGVsbG8"}}},
    # A part's body as a bare string instead of {"size", "data"}.
    "m-body": {"id": "m-body", "internalDate": "1700000000000",
               "payload": {"mimeType": "multipart/alternative", "headers": [{"name": "Subject", "value": "Hi"}],
                           "parts": [{"mimeType": "text/plain", "body": "SGVsbG8gdGhlcmU"}]}},
}
RUNS = [("user@acme.test", "m-headers"), ("sarah@acme.test", "m-headers"), ("user@acme.test", "m-headers"),
        ("admin@acme.test", "m-body")]
FAKE_GMAIL_GONE = "The demo's Gmail was a local fake that sent malformed messages: connect your own Gmail."


class _MalformedGmail(BaseHTTPRequestHandler):
    """Gmail's messages.list and messages.get, answering with the mailbox's one malformed message."""

    mailbox: list[str] = []

    def log_message(self, format, *args):  # noqa: A002 - http.server's name
        pass

    def do_GET(self):  # noqa: N802 - http.server's name
        path = urlsplit(self.path).path.removeprefix("/gmail/v1/users/me/")
        if path == "messages":
            status, body = 200, {"messages": [{"id": m} for m in self.mailbox], "resultSizeEstimate": len(self.mailbox)}
        elif path.startswith("messages/") and path.split("/", 1)[1] in MALFORMED:
            status, body = 200, MALFORMED[path.split("/", 1)[1]]
        else:
            status, body = 404, {"error": {"code": 404, "message": "Requested entity was not found."}}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def _malformed_gmail() -> Iterator[type[_MalformedGmail]]:
    handler = type("Mailbox", (_MalformedGmail,), {"mailbox": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with override_settings(GMAIL_API_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}"):
            yield handler
    finally:
        server.shutdown()
        server.server_close()


def seed_failures(ctx) -> None:
    from google_workspace.models import GmailAccount
    from hydration import services as hydration
    from hydration.models import Run
    from lindy.demo import require
    from memory import services as memory_services

    from .failures import triage
    from .models import FailureEvent, FailureGroup

    gmail_failures = FailureEvent.objects.filter(kind="hydration_source", route="hydration.gmail")
    if gmail_failures.exists():
        return
    with _malformed_gmail() as mailbox:
        for email, message_id in RUNS:
            user = ctx.users[email]
            GmailAccount.objects.update_or_create(user=user, defaults={
                "email": email, "access_token": "demo-token", "refresh_token": "",
                "token_expires_at": timezone.now() + timedelta(hours=1),
                "status": GmailAccount.Status.CONNECTED, "status_detail": ""})
            mailbox.mailbox[:] = [message_id]
            run = hydration.run_now_sync(filesystem=memory_services.filesystem_for_user(user), trigger=Run.Trigger.DEMO)
            require("analyst", run.status in (Run.Status.SUCCEEDED, Run.Status.NO_CHANGES),
                    f"the run of {email}'s memory ended {run.get_status_display()!r}: {run.error or run.stage}")
    GmailAccount.objects.filter(user__email__in={email for email, _ in RUNS}).update(
        status=GmailAccount.Status.DISCONNECTED, status_detail=FAKE_GMAIL_GONE, access_token="")
    groups = FailureGroup.objects.filter(events__in=gmail_failures).distinct()
    require("analyst", gmail_failures.count() == len(RUNS) and groups.count() == 2,
            f"the malformed Gmail payloads made {gmail_failures.count()} failures in {groups.count()} groups, "
            f"not {len(RUNS)} in 2")
    for group in groups:
        triage.group_triage(group=group)
