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

    def _top_level(self, channel: str) -> list[dict]:
        """What conversations.history shows: no thread replies (unless broadcast), and each parent with
        its reply_count and latest_reply."""
        messages = self.history.get(channel, [])
        shown = []
        for message in messages:
            thread_ts = message.get("thread_ts")
            if thread_ts and thread_ts != message["ts"] and message.get("subtype") != "thread_broadcast":
                continue
            replies = [m for m in messages if m.get("thread_ts") == message["ts"] and m["ts"] != message["ts"]]
            if replies:
                message = {**message, "thread_ts": message["ts"], "reply_count": len(replies),
                           "latest_reply": max(replies, key=lambda m: float(m["ts"]))["ts"]}
            shown.append(message)
        return shown

    def _replies(self, recorded):
        args = self._args(recorded)
        channel, thread_ts = args.get("channel"), args.get("ts")
        messages = self.history.get(channel, [])
        parent = next((m for m in messages if m["ts"] == thread_ts), None)
        if parent is None:
            return Reply(200, {"ok": False, "error": "thread_not_found"})
        oldest = float(args.get("oldest") or 0)
        replies = sorted((m for m in messages if m.get("thread_ts") == thread_ts and m["ts"] != thread_ts
                          and float(m["ts"]) > oldest), key=lambda m: float(m["ts"]))
        start = int(args.get("cursor") or 0)
        limit = min(int(args.get("limit") or 100), self.page_size)
        page = replies[start:start + limit]
        more = start + limit < len(replies)
        # Slack puts the parent first on every page, oldest reply next.
        return Reply(200, {"ok": True, "messages": [{**parent, "thread_ts": thread_ts}, *page], "has_more": more,
                           "response_metadata": {"next_cursor": str(start + limit) if more else ""}})

    def _method(self, recorded, match):
        if match.group(1) == "conversations.replies":
            return self._replies(recorded)
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
        inclusive = str(args.get("inclusive", "")).lower() in ("1", "true")
        # Slack answers newest first; `oldest` and `latest` are both exclusive unless `inclusive`.
        within = (lambda ts: oldest <= ts <= latest) if inclusive else (lambda ts: oldest < ts < latest)
        messages = sorted((m for m in self._top_level(channel) if within(float(m["ts"]))),
                          key=lambda m: -float(m["ts"]))
        start = int(args.get("cursor") or 0)
        limit = min(int(args.get("limit") or 100), self.page_size)
        page = messages[start:start + limit]
        more = start + limit < len(messages)
        return Reply(200, {"ok": True, "messages": page, "has_more": more, "pin_count": 0,
                           "response_metadata": {"next_cursor": str(start + limit) if more else ""}})
