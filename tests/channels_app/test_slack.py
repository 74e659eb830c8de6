"""Slack: OAuth install with Django stores, signed events register and deactivate channels."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client, override_settings

from channels_app import selectors
from channels_app.models import SlackChannel, SlackChannelShare, SlackInstallation, SlackOAuthState
from tests.channels_app.factories import SlackChannelFactory, SlackInstallationFactory
from tests.conftest import client_for
from tests.fakes import slack_api
from tests.fakes.slack_api import FakeSlack, member_joined, signed_event


@pytest.fixture
def slack():
    with FakeSlack() as fake, override_settings(**fake.settings()):
        yield fake


def post_event(event: dict, **kwargs):
    body, headers = signed_event(event, **kwargs)
    return Client().post("/slack/events", body, content_type="application/json", **headers)


def test_oauth_install_links_the_workspace_to_the_admins_team(cast, slack):
    admin = client_for(cast.admin)
    start = admin.get("/slack/install")
    assert start.status_code == 302
    target = urlsplit(start["Location"])
    assert target.path == "/oauth/v2/authorize"
    query = parse_qs(target.query)
    assert query["client_id"] == [slack_api.CLIENT_ID]
    state = query["state"][0]
    assert SlackOAuthState.objects.get(state=state).team == cast.team

    done = admin.get("/slack/oauth_redirect", {"code": "good-code", "state": state})
    assert done.status_code == 200
    installation = SlackInstallation.objects.get()
    assert installation.team == cast.team
    assert installation.bot_user_id == slack_api.BOT_USER_ID
    assert installation.bot_token == slack_api.BOT_TOKEN
    assert slack.calls("oauth.v2.access") and slack.calls("auth.test")
    # A state is good once.
    again = admin.get("/slack/oauth_redirect", {"code": "good-code", "state": state})
    assert again.status_code != 200 or SlackInstallation.objects.count() == 1
    assert SlackInstallation.objects.count() == 1


def test_install_needs_a_team_admin(cast, slack):
    assert client_for(cast.member).get("/slack/install").status_code == 404
    assert client_for(cast.admin).get("/slack/install", {"team": cast.other_team.pk}).status_code == 404
    assert Client().get("/slack/install").status_code == 302  # to the login page
    assert not SlackOAuthState.objects.exists()


def test_callback_with_unknown_state_installs_nothing(cast, slack):
    response = client_for(cast.admin).get("/slack/oauth_redirect", {"code": "good-code", "state": "forged"})
    assert response.status_code in (400, 401)
    assert not SlackInstallation.objects.exists()


@pytest.mark.django_db
def test_bot_joining_registers_public_and_private_channels_from_conversations_info(cast, slack):
    SlackInstallationFactory(team=cast.team)
    slack.add_user("U0MEMBER01", cast.member.email)
    slack.add_user("U0OUTSIDER", "stranger@elsewhere.test")
    # Both ids start with C: only conversations.info can tell them apart.
    slack.add_channel("C0PUBLIC01", "general", private=False)
    slack.add_channel("C0SECRET01", "leadership", private=True,
                      members=[slack_api.BOT_USER_ID, "U0MEMBER01", "U0OUTSIDER"])

    assert post_event(member_joined("C0PUBLIC01")).status_code == 200
    assert post_event(member_joined("C0SECRET01", channel_type="G")).status_code == 200

    public = SlackChannel.objects.get(channel_id="C0PUBLIC01")
    private = SlackChannel.objects.get(channel_id="C0SECRET01")
    assert (public.name, public.is_private, public.active, public.team) == ("general", False, True, cast.team)
    assert (private.name, private.is_private) == ("leadership", True)
    assert list(private.shares.values_list("user__email", flat=True)) == [cast.member.email]
    assert len(slack.calls("conversations.info")) == 2


def test_other_members_joining_a_private_channel_become_sharers(cast, slack):
    SlackInstallationFactory(team=cast.team)
    channel = SlackChannelFactory(team=cast.team, is_private=True)
    slack.add_user("U0ADMIN001", cast.admin.email)
    post_event(member_joined(channel.channel_id, user="U0ADMIN001"))
    assert SlackChannelShare.objects.filter(channel=channel, user=cast.admin).exists()
    left = {"type": "member_left_channel", "user": "U0ADMIN001", "channel": channel.channel_id,
            "channel_type": "G", "team": slack_api.TEAM_ID}
    post_event(left)
    assert not SlackChannelShare.objects.filter(channel=channel).exists()
    channel.refresh_from_db()
    assert channel.active


@pytest.mark.parametrize("event", [
    {"type": "channel_left", "channel": "{cid}", "actor_id": "U0KICKER01", "event_ts": "1.0"},
    {"type": "group_left", "channel": "{cid}", "actor_id": "U0KICKER01", "event_ts": "1.0"},
    {"type": "member_left_channel", "user": slack_api.BOT_USER_ID, "channel": "{cid}", "channel_type": "C",
     "team": slack_api.TEAM_ID},
])
def test_bot_leaving_deactivates_the_channel(cast, slack, event):
    SlackInstallationFactory(team=cast.team)
    channel = SlackChannelFactory(team=cast.team, use_for_team_memory=True)
    event = {k: (v.format(cid=channel.channel_id) if isinstance(v, str) else v) for k, v in event.items()}
    assert post_event(event).status_code == 200
    channel.refresh_from_db()
    assert not channel.active and channel.left_at is not None
    assert list(selectors.memory_channels_for_team(cast.team)) == []


def test_forged_or_stale_signatures_get_401_and_change_nothing(cast, slack):
    SlackInstallationFactory(team=cast.team)
    slack.add_channel("C0PUBLIC01", "general", private=False)
    forged = post_event(member_joined("C0PUBLIC01"), secret="not-the-secret")
    stale = post_event(member_joined("C0PUBLIC01"), timestamp=int(time.time()) - 600)
    assert forged.status_code == 401
    assert stale.status_code == 401
    unsigned = Client().post("/slack/events", b'{"type":"event_callback"}', content_type="application/json")
    assert unsigned.status_code == 401
    assert not SlackChannel.objects.exists()
    assert not slack.requests


@override_settings(SLACK_SIGNING_SECRET="", SLACK_CLIENT_ID="", SLACK_CLIENT_SECRET="")
def test_without_secrets_every_slack_endpoint_rejects(cast):
    body, headers = signed_event(member_joined("C0PUBLIC01"))
    assert Client().post("/slack/events", body, content_type="application/json", **headers).status_code == 401
    assert client_for(cast.admin).get("/slack/install").status_code == 404
    assert Client().get("/slack/oauth_redirect", {"code": "x", "state": "y"}).status_code == 404


def test_url_verification_challenge(slack, db):
    import hashlib
    import hmac
    import json

    body = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "x"}).encode()
    ts = str(int(time.time()))
    sig = "v0=" + hmac.new(slack_api.SIGNING_SECRET.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    response = Client().post("/slack/events", body, content_type="application/json",
                             HTTP_X_SLACK_REQUEST_TIMESTAMP=ts, HTTP_X_SLACK_SIGNATURE=sig)
    assert response.status_code == 200
    assert b"abc123" in response.content


def test_uninstall_forgets_tokens_and_stops_reading_channels(cast, slack):
    SlackInstallationFactory(team=cast.team)
    channel = SlackChannelFactory(team=cast.team, use_for_team_memory=True)
    assert post_event({"type": "app_uninstalled", "event_ts": "1.0"}).status_code == 200
    channel.refresh_from_db()
    assert not channel.active
    assert SlackInstallation.objects.get().bot_token == ""
    # With no token left, later events for the workspace are not acted on.
    slack.add_channel("C0PUBLIC09", "new", private=False)
    post_event(member_joined("C0PUBLIC09"))
    assert not SlackChannel.objects.filter(channel_id="C0PUBLIC09").exists()
