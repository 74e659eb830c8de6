"""Shared set-up for hydration tests: Slack channels wired to the fake, file systems."""

from __future__ import annotations

from channels_app.models import SlackChannel, SlackChannelShare, SlackInstallation
from memory import services as memory_services
from tests.fakes import slack_api


def installation(team) -> SlackInstallation:
    return SlackInstallation.objects.create(
        team=team, client_id=slack_api.CLIENT_ID, slack_team_id=slack_api.TEAM_ID, slack_team_name="Test Workspace",
        bot_token=slack_api.BOT_TOKEN, bot_user_id=slack_api.BOT_USER_ID, user_id="U0INSTALLR",
    )


def channel(team, inst, channel_id, name, *, private=False, team_memory=False) -> SlackChannel:
    return SlackChannel.objects.create(team=team, installation=inst, slack_team_id=slack_api.TEAM_ID,
                                       channel_id=channel_id, name=name, is_private=private,
                                       use_for_team_memory=team_memory)


def share(chan, user, enabled=True) -> SlackChannelShare:
    return SlackChannelShare.objects.create(channel=chan, user=user, use_for_memory=enabled)


def team_fs(team):
    return memory_services.filesystem_for_team(team)


def user_fs(user):
    return memory_services.filesystem_for_user(user)
