"""FakeSlack plus `conversations.history`, with Slack's shapes: `oldest` and `latest` (exclusive), cursor
pagination through `response_metadata.next_cursor`, and 429 with Retry-After."""

from __future__ import annotations

from tests.fakes.http import Reply
from tests.fakes.slack_api import BOT_TOKEN, FakeSlack


class FakeSlackHistory(FakeSlack):
    def __init__(self, page_size: int = 2):
        super().__init__()
        self.history: dict[str, list[dict]] = {}
        self.page_size = page_size
        self.rate_limit_next = 0  # how many history calls answer 429 before serving

    def post_message(self, channel: str, ts: str, text: str, user: str = "U0ALICE", **extra) -> None:
        self.history.setdefault(channel, []).append({"type": "message", "user": user, "text": text, "ts": ts, **extra})

    def _method(self, recorded, match):
        if match.group(1) != "conversations.history":
            return super()._method(recorded, match)
        if self.rate_limit_next > 0:
            self.rate_limit_next -= 1
            return Reply(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "0"})
        if recorded.headers.get("authorization") != f"Bearer {BOT_TOKEN}":
            return Reply(200, {"ok": False, "error": "not_authed"})
        args = self._args(recorded)
        channel = args.get("channel")
        if channel not in self.history and channel not in self.channels:
            return Reply(200, {"ok": False, "error": "channel_not_found"})
        oldest = float(args.get("oldest") or 0)
        latest = float(args.get("latest") or "inf")
        # Slack answers newest first; `oldest` and `latest` are both exclusive by default.
        messages = sorted((m for m in self.history.get(channel, []) if oldest < float(m["ts"]) < latest),
                          key=lambda m: -float(m["ts"]))
        start = int(args.get("cursor") or 0)
        limit = min(int(args.get("limit") or 100), self.page_size)
        page = messages[start:start + limit]
        more = start + limit < len(messages)
        return Reply(200, {"ok": True, "messages": page, "has_more": more, "pin_count": 0,
                           "response_metadata": {"next_cursor": str(start + limit) if more else ""}})
