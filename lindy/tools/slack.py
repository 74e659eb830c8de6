"""post_slack_message through slack_sdk's WebClient (base URL configurable for tests and proxies)."""

from __future__ import annotations

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from validator.models import OutboxEntry

from .outbox import entry_create


def configured() -> bool:
    return bool(getattr(settings, "LINDY_SLACK_BOT_TOKEN", ""))


def client() -> WebClient:
    return WebClient(token=settings.LINDY_SLACK_BOT_TOKEN, base_url=settings.LINDY_SLACK_API_URL, timeout=15)


def post(ctx, arguments: dict, result_cls):
    try:
        response = client().chat_postMessage(channel=arguments["channel"], text=arguments["text"])
    except (SlackApiError, SlackClientError, OSError) as exc:
        error = exc.response.get("error") if isinstance(exc, SlackApiError) else str(exc)
        entry = entry_create(ctx, "post_slack_message", arguments, adapter="slack",
                             status=OutboxEntry.Status.FAILED, error=str(error))
        return result_cls(ok=False, adapter="slack", data={"outbox_id": entry.pk},
                          content=f"Slack refused the message: {error}")
    data = {"channel": response.get("channel"), "ts": response.get("ts")}
    entry = entry_create(ctx, "post_slack_message", arguments, adapter="slack", status=OutboxEntry.Status.SENT,
                         response=data)
    return result_cls(ok=True, adapter="slack", data={"outbox_id": entry.pk, **data},
                      content=f"Posted in Slack channel {data['channel']} (ts {data['ts']}).")
