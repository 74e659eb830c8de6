"""post_slack_message through slack_sdk's WebClient, with the bot token of the team's Slack
installation (channels_app), and only in channels the assistant was added to."""

from __future__ import annotations

from django.db.models import Q
from slack_sdk.errors import SlackApiError, SlackClientError

from channels_app.models import SlackChannel, SlackInstallation
from lindy.slack_client import web_client

from ..models import OutboxEntry
from .outbox import entry_create


def configured(team_ids) -> bool:
    """Is Slack installed, with a bot token, for any of these teams?"""
    return SlackInstallation.objects.filter(team_id__in=team_ids).exclude(bot_token="").exists()


def _channel(team, name_or_id: str) -> SlackChannel | None:
    name = name_or_id.lstrip("#")
    return (
        SlackChannel.objects.select_related("installation")
        .filter(team=team, active=True, installation__isnull=False)
        .exclude(installation__bot_token="")
        .filter(Q(channel_id=name_or_id) | Q(name=name))
        .first()
    )


def _failed(ctx, arguments: dict, result_cls, error: str, content: str):
    entry = entry_create(ctx, "post_slack_message", arguments, adapter="slack", status=OutboxEntry.Status.FAILED,
                         error=error)
    return result_cls(ok=False, adapter="slack", data={"outbox_id": entry.pk}, content=content)


def post(ctx, arguments: dict, result_cls):
    channel = _channel(ctx.team, arguments["channel"])
    if channel is None:
        return _failed(ctx, arguments, result_cls, "not_in_channel",
                       f"The assistant was not added to a Slack channel {arguments['channel']!r} in this team's "
                       "workspace; it only posts where it was added.")
    installation = channel.installation
    if installation is None:  # _channel only finds channels of an installation; a guard for the type
        return _failed(ctx, arguments, result_cls, "not_installed", "Slack is not installed for this team.")
    client = web_client(installation.bot_token)
    try:
        response = client.chat_postMessage(channel=channel.channel_id, text=arguments["text"])
    except (SlackApiError, SlackClientError, OSError) as exc:
        error = exc.response.get("error") if isinstance(exc, SlackApiError) else str(exc)
        return _failed(ctx, arguments, result_cls, str(error), f"Slack refused the message: {error}")
    data = {"channel": response.get("channel"), "ts": response.get("ts")}
    entry = entry_create(ctx, "post_slack_message", arguments, adapter="slack", status=OutboxEntry.Status.SENT,
                         response=data)
    return result_cls(ok=True, adapter="slack", data={"outbox_id": entry.pk, **data},
                      content=f"Posted in Slack channel #{channel.name or channel.channel_id} (ts {data['ts']}).")
