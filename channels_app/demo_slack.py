"""The demo's Slack: a local HTTP server that answers the Slack Web API methods the product calls
(oauth.v2.access, auth.test, conversations.info, conversations.members, users.info) for Acme's demo
workspace, and Events API deliveries signed the way Slack signs them (v0, the signing secret), so
the demo installs the app and adds the assistant to channels through the product's own endpoints
with nothing leaving the machine."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from django.test.utils import override_settings

SIGNING_SECRET = "demo-slack-signing-secret"
CLIENT_ID = "demo"
CLIENT_SECRET = "demo-slack-client-secret"
CODE = "demo-oauth-code"
TEAM_ID = "T0ACMEDEMO"
TEAM_NAME = "Acme (demo workspace)"
BOT_USER_ID = "U0LINDYBOT"
BOT_TOKEN = "xoxb-demo-bot-token"  # noqa: S105 - the local fake's token, worthless anywhere else
INSTALLER = "U0ACMEADMN"

# The workspace as Slack knows it: channels (id: name, private, members) and people (id: email).
CHANNELS = {
    "C0GENERAL1": ("general", False, [INSTALLER, "U0ACMEUSER"]),
    "C0ENGINEER": ("engineering", False, ["U0ACMEUSER"]),
    "C0LEADERSH": ("leadership", True, [INSTALLER, "U0ACMEUSER", BOT_USER_ID]),
}
PEOPLE = {INSTALLER: "admin@acme.test", "U0ACMEUSER": "user@acme.test"}


class _Slack(BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _answer(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802 - http.server's name
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if (self.headers.get("Content-Type") or "").startswith("application/json"):
            args = json.loads(raw or b"{}")
        else:
            args = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        method = self.path.rsplit("/", 1)[-1]
        if method == "oauth.v2.access":
            basic = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            client_ok = self.headers.get("Authorization") == basic or (
                args.get("client_id") == CLIENT_ID and args.get("client_secret") == CLIENT_SECRET)
            if args.get("code") != CODE or not client_ok:
                return self._answer({"ok": False, "error": "invalid_code"})
            return self._answer({
                "ok": True, "app_id": "A0LINDYDEMO", "access_token": BOT_TOKEN, "token_type": "bot",
                "scope": "channels:read,groups:read,channels:history,groups:history,users:read,users:read.email",
                "bot_user_id": BOT_USER_ID, "team": {"id": TEAM_ID, "name": TEAM_NAME}, "enterprise": None,
                "is_enterprise_install": False, "authed_user": {"id": INSTALLER},
            })
        if self.headers.get("Authorization") != f"Bearer {BOT_TOKEN}":
            return self._answer({"ok": False, "error": "not_authed"})
        if method == "auth.test":
            return self._answer({"ok": True, "url": "https://acme-demo.slack.com/", "team": TEAM_NAME, "user": "lindy",
                                 "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": "B0LINDYDEMO"})
        if method == "conversations.info":
            channel_id = args.get("channel", "")
            if channel_id not in CHANNELS:
                return self._answer({"ok": False, "error": "channel_not_found"})
            name, private, _ = CHANNELS[channel_id]
            return self._answer({"ok": True, "channel": {
                "id": channel_id, "name": name, "is_channel": True, "is_group": False, "is_im": False,
                "is_private": private, "is_archived": False, "is_member": True, "context_team_id": TEAM_ID}})
        if method == "conversations.members":
            members = CHANNELS.get(args.get("channel", ""), ("", False, []))[2]
            return self._answer({"ok": True, "members": members, "response_metadata": {"next_cursor": ""}})
        if method == "users.info":
            email = PEOPLE.get(args.get("user", ""))
            if email is None:
                return self._answer({"ok": False, "error": "user_not_found"})
            return self._answer({"ok": True, "user": {
                "id": args["user"], "team_id": TEAM_ID, "name": email.split("@")[0], "deleted": False,
                "is_bot": False, "profile": {"email": email, "real_name": email}}})
        return self._answer({"ok": False, "error": "unknown_method"})


@contextmanager
def slack() -> Iterator[None]:
    """The fake Slack on a free local port, and the settings that point the product at it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slack)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with override_settings(SLACK_SIGNING_SECRET=SIGNING_SECRET, SLACK_CLIENT_ID=CLIENT_ID,
                               SLACK_CLIENT_SECRET=CLIENT_SECRET, SLACK_API_BASE_URL=url + "/api/",
                               SLACK_AUTHORIZE_URL=url + "/oauth/v2/authorize"):
            yield
    finally:
        server.shutdown()
        server.server_close()


def bot_joined(channel_id: str, *, inviter: str = INSTALLER) -> tuple[bytes, dict]:
    """Slack's member_joined_channel delivery for the bot added to `channel_id`, signed (v0)."""
    now = int(time.time())
    _, private, _ = CHANNELS[channel_id]
    event = {"type": "member_joined_channel", "user": BOT_USER_ID, "channel": channel_id,
             "channel_type": "G" if private else "C", "team": TEAM_ID, "inviter": inviter, "event_ts": f"{now}.000100"}
    body = json.dumps({
        "token": "demo", "team_id": TEAM_ID, "api_app_id": "A0LINDYDEMO", "type": "event_callback", "event": event,
        "event_id": event_id(channel_id), "event_time": now,
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }).encode()
    signature = "v0=" + hmac.new(SIGNING_SECRET.encode(), f"v0:{now}:".encode() + body, hashlib.sha256).hexdigest()
    return body, {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(now), "HTTP_X_SLACK_SIGNATURE": signature}


def event_id(channel_id: str) -> str:
    return f"EvDEMO{channel_id}"
