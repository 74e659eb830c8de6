"""Slack, through slack_sdk: only channels the assistant was explicitly added to and that
are switched on for memory (a user's private channels for their memory, public channels for
the team's). `conversations.history` from each channel's cursor, every page, honouring
Slack's 429 Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from lindy import seams
from lindy.slack_client import web_client

from ..models import Item
from .base import Fetched, NotConnected, Source, SourceItem

PAGE_SIZE = 200
MAX_PAGES_PER_CHANNEL = 50
# Thread replies are not in conversations.history: each thread is read with conversations.replies,
# its parent quoted. A reply can come days after its parent was read: each run looks back this far
# above the channel's cursor for threads with replies newer than it.
THREAD_LOOKBACK_SECONDS = 7 * 24 * 3600
THREAD_LOOKBACK_PAGES = 5
MAX_PAGES_PER_THREAD = 10
SKIPPED_SUBTYPES = {"channel_join", "channel_leave", "bot_add", "bot_remove", "channel_purpose", "channel_topic"}


def client_for(token: str) -> WebClient:
    client = web_client(token)
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=settings.HYDRATION_SLACK_MAX_RETRIES))
    return client


def _authors(filesystem, channel):
    """Slack user id -> whose words (Item.AuthorKind) for the messages of `channel`.

    A user memory reads private channels: the owner is known by their share of the channel,
    the other Lindy users sharing it are teammates, anyone else (a guest, a bot) is external.
    A team memory reads the team's public channels: its members speak for the team."""
    if filesystem.kind == "team":
        return None
    return {slack_id: Item.AuthorKind.OWNER if user_id == filesystem.owner_id else Item.AuthorKind.TEAMMATE
            for slack_id, user_id in channel.members.items()}


def _author_kind(authors: dict | None, message: dict) -> str:
    user = message.get("user") or ""
    if not user or message.get("bot_id"):
        return Item.AuthorKind.EXTERNAL
    if authors is None:
        return Item.AuthorKind.OWNER
    return authors.get(user, Item.AuthorKind.EXTERNAL)


def permalink(workspace_url: str, channel_id: str, ts: str) -> str:
    if not workspace_url:
        return ""
    return f"{workspace_url.rstrip('/')}/archives/{channel_id}/p{ts.replace('.', '')}"


def _is_thread_parent(message: dict) -> bool:
    ts = message.get("ts", "")
    return bool(ts and message.get("reply_count") and message.get("thread_ts", ts) == ts)


def _thread_items(client: WebClient, channel, thread_ts: str, oldest: str, *, authors, workspace_url: str) -> list[SourceItem]:
    """The replies of one thread newer than `oldest`, each with its parent quoted (Slack answers
    conversations.replies with the parent first)."""
    items: list[SourceItem] = []
    parent_text, page_cursor = "", None
    for _ in range(MAX_PAGES_PER_THREAD):
        response = client.conversations_replies(channel=channel.channel_id, ts=thread_ts, oldest=oldest,
                                                limit=PAGE_SIZE, cursor=page_cursor)
        thread_messages: list[dict] = response.get("messages", [])
        for message in thread_messages:
            ts, text = message.get("ts", ""), (message.get("text") or "").strip()
            if ts == thread_ts:
                parent_text = text
                continue
            if not ts or not text or float(ts) <= float(oldest) or message.get("subtype") in SKIPPED_SUBTYPES:
                continue
            quoted = f' on "{parent_text[:200]}"' if parent_text else ""
            user = message.get("user") or message.get("username") or message.get("bot_id", "")
            items.append(SourceItem(
                external_id=f"{channel.slack_team_id}:{channel.channel_id}:{ts}",
                author=user, author_kind=_author_kind(authors, message),
                author_name=f"Slack user {message.get('user') or message.get('username') or 'bot'}"[:255],
                title=f"#{channel.name or channel.channel_id} (thread)",
                reference=permalink(workspace_url, channel.channel_id, ts),
                occurred_at=datetime.fromtimestamp(float(ts), tz=UTC),
                text=f"#{channel.name or channel.channel_id}, replying in a thread{quoted}: {text}",
            ))
        page_cursor = (response.get("response_metadata") or {}).get("next_cursor")
        if not response.get("has_more") or not page_cursor:
            break
    return items


def _threads_with_new_replies(client: WebClient, channel, oldest: str) -> list[tuple[str, str]]:
    """(parent ts, latest reply ts) of the threads started before the channel's cursor (within the
    lookback) that have a reply after it."""
    if float(oldest) <= 0:
        return []
    found, page_cursor = [], None
    since = str(max(float(oldest) - THREAD_LOOKBACK_SECONDS, 0))
    for _ in range(THREAD_LOOKBACK_PAGES):
        response = client.conversations_history(channel=channel.channel_id, oldest=since, latest=oldest,
                                                inclusive=True, limit=PAGE_SIZE, cursor=page_cursor)
        parents: list[dict] = response.get("messages", [])
        found += [(m["ts"], m["latest_reply"]) for m in parents
                  if _is_thread_parent(m) and float(m.get("latest_reply") or 0) > float(oldest)]
        page_cursor = (response.get("response_metadata") or {}).get("next_cursor")
        if not response.get("has_more") or not page_cursor:
            break
    return found


class SlackSource(Source):
    kind = "slack"

    def channels(self, filesystem) -> list[seams.SlackMemoryChannel]:
        """The channels switched on for this memory, from the provider channels_app registers in
        lindy.seams (hydration does not import channels_app), by channel id."""
        if filesystem.kind == "team":
            channels = seams.slack_channels("team", filesystem.team)
        else:
            channels = seams.slack_channels("user", filesystem.owner)
        return sorted(channels, key=lambda c: c.channel_id)

    def fetch(self, filesystem, cursor: dict) -> Fetched:
        channels = self.channels(filesystem)
        if not channels:
            raise NotConnected("No Slack channel is switched on for this memory.")
        with_token = [c for c in channels if c.bot_token]
        if not with_token:
            raise NotConnected("Slack is not installed with a bot token for these channels.")
        latest: dict = dict(cursor.get("channels") or {})
        # A channel whose backlog did not fit in one run: {"latest": the oldest ts read so far,
        # "newest": the newest}. Its cursor stays put until the older part has been read too.
        backfill: dict = dict(cursor.get("backfill") or {})
        # Per channel, per thread: the newest reply read (threads are not in the history cursor).
        thread_marks: dict = dict(cursor.get("threads") or {})
        workspace_urls: dict[int | None, str] = {}
        items: list[SourceItem] = []
        for channel in with_token:
            client = client_for(channel.bot_token)
            if channel.installation_id not in workspace_urls:
                workspace_urls[channel.installation_id] = client.auth_test().get("url", "")
            oldest = latest.get(channel.channel_id, "0")
            pending = backfill.get(channel.channel_id) or {}
            upper = pending.get("latest")
            newest = pending.get("newest", oldest)
            lowest = None
            page_cursor, complete = None, False
            authors = _authors(filesystem, channel)
            # Threads to read: parent ts -> read its replies newer than this.
            threads: dict[str, str] = {}
            replies_read: dict = dict(thread_marks.get(channel.channel_id) or {})
            for _ in range(MAX_PAGES_PER_CHANNEL):
                window = {"latest": upper} if upper else {}
                response = client.conversations_history(
                    channel=channel.channel_id, oldest=oldest, limit=PAGE_SIZE, cursor=page_cursor, **window,
                )
                messages: list[dict] = response.get("messages", [])
                for message in messages:
                    ts = message.get("ts", "")
                    if ts and (lowest is None or float(ts) < float(lowest)):
                        lowest = ts
                    text = (message.get("text") or "").strip()
                    if _is_thread_parent(message):
                        threads[ts] = replies_read.get(ts, "0")
                    if not ts or not text or message.get("subtype") in SKIPPED_SUBTYPES:
                        continue
                    if float(ts) > float(newest):
                        newest = ts
                    items.append(SourceItem(
                        external_id=f"{channel.slack_team_id}:{channel.channel_id}:{ts}",
                        author=message.get("user") or message.get("username") or message.get("bot_id", ""),
                        author_kind=_author_kind(authors, message),
                        author_name=f"Slack user {message.get('user') or message.get('username') or 'bot'}"[:255],
                        title=f"#{channel.name or channel.channel_id}",
                        reference=permalink(workspace_urls[channel.installation_id], channel.channel_id, ts),
                        occurred_at=datetime.fromtimestamp(float(ts), tz=UTC),
                        text=f"#{channel.name or channel.channel_id}: {text}",
                    ))
                page_cursor = (response.get("response_metadata") or {}).get("next_cursor")
                if not response.get("has_more") or not page_cursor:
                    complete = True
                    break
            for thread_ts, latest_reply in _threads_with_new_replies(client, channel, oldest):
                after = max(oldest, replies_read.get(thread_ts, "0"), key=float)
                if float(latest_reply) > float(after):
                    threads.setdefault(thread_ts, after)
            for thread_ts, replies_after in threads.items():
                replies = _thread_items(client, channel, thread_ts, replies_after, authors=authors,
                                        workspace_url=workspace_urls[channel.installation_id])
                items.extend(replies)
                if replies:
                    replies_read[thread_ts] = max((r.external_id.rsplit(":", 1)[1] for r in replies), key=float)
            # Remember how far each thread was read while the lookback can still find it.
            horizon = float(newest) - THREAD_LOOKBACK_SECONDS
            replies_read = {ts: mark for ts, mark in replies_read.items() if float(ts) >= horizon}
            if replies_read:
                thread_marks[channel.channel_id] = replies_read
            else:
                thread_marks.pop(channel.channel_id, None)
            # Slack answers newest first: a backlog cut short left its OLDEST messages unread.
            # Moving the cursor past them would lose them; read below `lowest` next run instead.
            if complete or lowest is None:
                latest[channel.channel_id] = newest
                backfill.pop(channel.channel_id, None)
            else:
                backfill[channel.channel_id] = {"latest": lowest, "newest": newest}
        items.sort(key=lambda item: item.occurred_at)
        cursor = {"channels": latest}
        if backfill:
            cursor["backfill"] = backfill
        if thread_marks:
            cursor["threads"] = thread_marks
        return Fetched(items=items, cursor=cursor)

    def describe(self, filesystem) -> list[str]:
        return [f"#{c.name or c.channel_id}" + ("" if c.bot_token else " (no bot token)")
                for c in self.channels(filesystem)]
