"""The one way the product builds a Slack `WebClient`: Slack's own client, pointed at
settings.SLACK_API_BASE_URL (a local fake in tests, a proxy in some deployments), with one
timeout policy (settings.SLACK_HTTP_TIMEOUT). Part of the core: it imports no app."""

from __future__ import annotations

from django.conf import settings
from slack_sdk import WebClient


def web_client(token: str | None = None) -> WebClient:
    """A WebClient for `token` (a bot token), or without one (OAuth exchanges, Bolt's own client)."""
    # slack_sdk annotates `timeout` as int but hands it to urllib, which takes seconds as a float.
    timeout = settings.SLACK_HTTP_TIMEOUT
    return WebClient(token=token, base_url=settings.SLACK_API_BASE_URL, timeout=timeout)  # type: ignore[arg-type]
