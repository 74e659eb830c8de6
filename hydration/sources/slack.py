"""Slack, through slack_sdk: only channels the assistant was explicitly added to and that
are switched on for memory (a user's private channels for their memory, public channels for
the team's). `conversations.history` from each channel's cursor, every page, honouring
Slack's 429 Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.utils.module_loading import import_string
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from lindy.slack_client import web_client

from ..models import Item
from .base import Fetched, NotConnected, Source, SourceItem

PAGE_SIZE = 200
MAX_PAGES_PER_CHANNEL = 50
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
    known = {slack_id: user_id for slack_id, user_id in channel.shares.exclude(slack_user_id="")
             .values_list("slack_user_id", "user_id")}
    return {slack_id: Item.AuthorKind.OWNER if user_id == filesystem.owner_id else Item.AuthorKind.TEAMMATE
            for slack_id, user_id in known.items()}


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


class SlackSource(Source):
    kind = "slack"

    def channels(self, filesystem):
        """The channels switched on for this memory, from the channels app through the seams named in
        settings (HYDRATION_SLACK_CHANNELS_FOR_TEAM / _FOR_USER): hydration does not import it."""
        if filesystem.kind == "team":
            channels = import_string(settings.HYDRATION_SLACK_CHANNELS_FOR_TEAM)(filesystem.team)
        else:
            channels = import_string(settings.HYDRATION_SLACK_CHANNELS_FOR_USER)(filesystem.owner)
        return list(channels.select_related("installation").order_by("channel_id"))

    def fetch(self, filesystem, cursor: dict) -> Fetched:
        channels = self.channels(filesystem)
        if not channels:
            raise NotConnected("No Slack channel is switched on for this memory.")
        with_token = [c for c in channels if c.installation and c.installation.bot_token]
        if not with_token:
            raise NotConnected("Slack is not installed with a bot token for these channels.")
        latest: dict = dict(cursor.get("channels") or {})
        # A channel whose backlog did not fit in one run: {"latest": the oldest ts read so far,
        # "newest": the newest}. Its cursor stays put until the older part has been read too.
        backfill: dict = dict(cursor.get("backfill") or {})
        workspace_urls: dict[int, str] = {}
        items: list[SourceItem] = []
        for channel in with_token:
            installation = channel.installation
            client = client_for(installation.bot_token)
            if installation.pk not in workspace_urls:
                workspace_urls[installation.pk] = client.auth_test().get("url", "")
            oldest = latest.get(channel.channel_id, "0")
            pending = backfill.get(channel.channel_id) or {}
            upper = pending.get("latest")
            newest = pending.get("newest", oldest)
            lowest = None
            page_cursor, complete = None, False
            authors = _authors(filesystem, channel)
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
                        reference=permalink(workspace_urls[installation.pk], channel.channel_id, ts),
                        occurred_at=datetime.fromtimestamp(float(ts), tz=UTC),
                        text=f"#{channel.name or channel.channel_id}: {text}",
                    ))
                page_cursor = (response.get("response_metadata") or {}).get("next_cursor")
                if not response.get("has_more") or not page_cursor:
                    complete = True
                    break
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
        return Fetched(items=items, cursor=cursor)

    def describe(self, filesystem) -> list[str]:
        return [f"#{c.name or c.channel_id}" + ("" if c.installation and c.installation.bot_token else " (no bot token)")
                for c in self.channels(filesystem)]
