"""A local server speaking the Slack Web API methods the app calls, and Events API requests
signed with Slack's v0 scheme."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from urllib.parse import parse_qs

from tests.fakes.http import Reply
from tests.fakes.routes import PatternFakeServer

SIGNING_SECRET = "slack-signing-secret"
CLIENT_ID = "1111.2222"
CLIENT_SECRET = "slack-client-secret"
TEAM_ID = "T0TESTTEAM"
BOT_USER_ID = "U0LINDYBOT"
BOT_TOKEN = "xoxb-test-bot-token"


class FakeSlack(PatternFakeServer):
    def __init__(self):
        super().__init__()
        self.channels: dict[str, dict] = {}
        self.members: dict[str, list[str]] = {}
        self.users: dict[str, dict] = {}
        self.posted: list[dict] = []  # chat.postMessage arguments, in order
        self.route("POST", r"/api/([a-zA-Z0-9.]+)", self._method)

    def settings(self) -> dict:
        return {
            "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_CLIENT_ID": CLIENT_ID, "SLACK_CLIENT_SECRET": CLIENT_SECRET,
            "SLACK_API_BASE_URL": self.url + "/api/", "SLACK_AUTHORIZE_URL": self.url + "/oauth/v2/authorize",
        }

    def add_channel(self, channel_id: str, name: str, *, private: bool, members: list[str] = ()) -> None:
        self.channels[channel_id] = {
            "id": channel_id, "name": name, "is_channel": True, "is_group": False, "is_im": False,
            "is_private": private, "is_archived": False, "is_member": True, "context_team_id": TEAM_ID,
        }
        self.members[channel_id] = list(members)

    def add_user(self, user_id: str, email: str) -> None:
        self.users[user_id] = {"id": user_id, "team_id": TEAM_ID, "name": email.split("@")[0], "deleted": False,
                               "is_bot": False, "profile": {"email": email, "real_name": email}}

    def calls(self, method: str) -> list:
        return [r for r in self.requests if r.path == f"/api/{method}"]

    @staticmethod
    def _args(recorded) -> dict:
        if recorded.headers.get("content-type", "").startswith("application/json"):
            return recorded.json
        return {k: v[0] for k, v in parse_qs(recorded.body.decode()).items()}

    def _method(self, recorded, match):
        method, args = match.group(1), self._args(recorded)
        if method == "oauth.v2.access":
            basic = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            client_ok = recorded.headers.get("authorization") == basic or (
                args.get("client_id") == CLIENT_ID and args.get("client_secret") == CLIENT_SECRET
            )
            if args.get("code") != "good-code" or not client_ok:
                return Reply(200, {"ok": False, "error": "invalid_code"})
            return Reply(200, {
                "ok": True, "app_id": "A0LINDY", "access_token": BOT_TOKEN, "token_type": "bot",
                "scope": "channels:read,groups:read", "bot_user_id": BOT_USER_ID,
                "team": {"id": TEAM_ID, "name": "Test Workspace"}, "enterprise": None, "is_enterprise_install": False,
                "authed_user": {"id": "U0INSTALLR"},
            })
        if recorded.headers.get("authorization") != f"Bearer {BOT_TOKEN}":
            return Reply(200, {"ok": False, "error": "not_authed"})
        if method == "auth.test":
            return Reply(200, {"ok": True, "url": "https://test.slack.com/", "team": "Test Workspace", "user": "lindy",
                               "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": "B0LINDY"})
        if method == "conversations.info":
            channel = self.channels.get(args.get("channel"))
            return Reply(200, {"ok": True, "channel": channel} if channel else {"ok": False, "error": "channel_not_found"})
        if method == "conversations.members":
            return Reply(200, {"ok": True, "members": self.members.get(args.get("channel"), []),
                               "response_metadata": {"next_cursor": ""}})
        if method == "chat.postMessage":
            channel = args.get("channel", "")
            known = channel in self.channels or any(c["name"] == channel.lstrip("#") for c in self.channels.values())
            if not known:
                return Reply(200, {"ok": False, "error": "channel_not_found"})
            self.posted.append(args)
            ts = f"{time.time():.6f}"
            return Reply(200, {"ok": True, "channel": channel, "ts": ts, "message": {
                "type": "message", "subtype": "bot_message", "text": args.get("text", ""), "ts": ts, "bot_id": "B0LINDY"}})
        if method == "users.info":
            user = self.users.get(args.get("user"))
            return Reply(200, {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"})
        return Reply(200, {"ok": False, "error": "unknown_method"})


def signed_event(event: dict, *, secret: str = SIGNING_SECRET, timestamp: int | None = None,
                 team_id: str = TEAM_ID) -> tuple[bytes, dict]:
    payload = {
        "token": "legacy", "team_id": team_id, "api_app_id": "A0LINDY", "type": "event_callback",
        "event": event, "event_id": f"Ev{abs(hash(json.dumps(event, sort_keys=True))) % 10**10}",
        "event_time": int(time.time()), "authorizations": [{"team_id": team_id, "user_id": BOT_USER_ID, "is_bot": True}],
    }
    body = json.dumps(payload).encode()
    ts = str(int(time.time()) if timestamp is None else timestamp)
    base = f"v0:{ts}:".encode() + body
    sig = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return body, {"HTTP_X_SLACK_REQUEST_TIMESTAMP": ts, "HTTP_X_SLACK_SIGNATURE": sig}


def member_joined(channel: str, user: str = BOT_USER_ID, channel_type: str = "C", inviter: str = "U0INVITER") -> dict:
    return {"type": "member_joined_channel", "user": user, "channel": channel, "channel_type": channel_type,
            "team": TEAM_ID, "inviter": inviter, "event_ts": f"{time.time():.6f}"}
