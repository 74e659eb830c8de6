"""Slack tokens are encrypted at rest; code only ever sees the plaintext."""

import pytest
from django.db import connection

from channels_app.models import SlackInstallation
from lindy import encryption
from tests.channels_app.factories import SlackInstallationFactory

pytestmark = pytest.mark.django_db


def test_slack_tokens_are_ciphertext_in_the_database(cast):
    installation = SlackInstallationFactory(team=cast.team, bot_token="xoxb-real-secret", user_token="xoxp-user-secret")
    with connection.cursor() as cursor:
        cursor.execute("SELECT bot_token, user_token, bot_refresh_token FROM channels_app_slackinstallation WHERE id = %s",
                       [installation.pk])
        bot, user, refresh = cursor.fetchone()
    assert "xox" not in bot and "xox" not in user and refresh == ""
    assert encryption.decrypt(bot) == "xoxb-real-secret"
    fresh = SlackInstallation.objects.get(pk=installation.pk)
    assert (fresh.bot_token, fresh.user_token) == ("xoxb-real-secret", "xoxp-user-secret")
    # "No token" stays queryable.
    assert SlackInstallation.objects.exclude(bot_token="").count() == 1
