"""Slack: OAuth install with Django stores, signed events register and deactivate channels."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from channels_app import selectors
from channels_app.models import SlackChannel, SlackChannelShare, SlackInstallation, SlackOAuthState
from tests.channels_app.factories import SlackChannelFactory, SlackInstallationFactory
from tests.conftest import client_for
from tests.fakes import slack_api
from tests.fakes.http import Reply
from tests.fakes.slack_api import FakeSlack, member_joined, signed_event


@pytest.fixture
def slack():
    with FakeSlack() as fake, override_settings(**fake.settings()):
        yield fake


@pytest.fixture
def post_event(monkeypatch, django_capture_on_commit_callbacks):
    """Post a signed event, then run what it queued the way a worker would (the real task, in
    this process): the endpoint only stores the event (test_slack_events.py has the real worker)."""
    from celery import current_app

    from lindy import queue as lindy_queue

    monkeypatch.setattr(lindy_queue, "enqueue",
                        lambda name, *args, countdown=None: current_app.tasks[name].apply(args=args).get())

    def post(event: dict, **kwargs):
        body, headers = signed_event(event, **kwargs)
        with django_capture_on_commit_callbacks(execute=True):
            return Client().post("/slack/events", body, content_type="application/json", **headers)

    return post


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
    assert response.status_code == 400
    assert not SlackInstallation.objects.exists()


@pytest.mark.django_db
def test_bot_joining_registers_public_and_private_channels_from_conversations_info(cast, slack, post_event):
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


def test_other_members_joining_a_private_channel_become_sharers(cast, slack, post_event):
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
def test_bot_leaving_deactivates_the_channel(cast, slack, event, post_event):
    SlackInstallationFactory(team=cast.team)
    channel = SlackChannelFactory(team=cast.team, use_for_team_memory=True)
    event = {k: (v.format(cid=channel.channel_id) if isinstance(v, str) else v) for k, v in event.items()}
    assert post_event(event).status_code == 200
    channel.refresh_from_db()
    assert not channel.active and channel.left_at is not None
    assert list(selectors.memory_channels_for_team(cast.team)) == []


def test_forged_or_stale_signatures_get_401_and_change_nothing(cast, slack, post_event):
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


def test_uninstall_forgets_tokens_and_stops_reading_channels(cast, slack, post_event):
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


def test_events_are_stored_then_processed_by_the_task_not_the_request(cast, slack, django_capture_on_commit_callbacks,
                                                                      monkeypatch):
    from channels_app import services
    from channels_app.models import SlackEvent
    from lindy import queue as lindy_queue

    queued = []
    monkeypatch.setattr(lindy_queue, "enqueue", lambda name, *args, countdown=None: queued.append((name, args)))
    SlackInstallationFactory(team=cast.team)
    slack.add_channel("C0PUBLIC01", "general", private=False)
    body, headers = signed_event(member_joined("C0PUBLIC01"))
    with django_capture_on_commit_callbacks(execute=True):
        assert Client().post("/slack/events", body, content_type="application/json", **headers).status_code == 200
    event = SlackEvent.objects.get()
    assert (event.status, event.slack_team_id) == ("pending", slack_api.TEAM_ID)
    assert queued == [("channels_app.tasks.slack_event_process", (event.pk,))]
    assert not SlackChannel.objects.exists() and not slack.requests

    # A retry soon after is counted, not queued again; one long after (its task lost) is queued again.
    with django_capture_on_commit_callbacks(execute=True):
        Client().post("/slack/events", body, content_type="application/json", **headers, HTTP_X_SLACK_RETRY_NUM="1")
    assert len(queued) == 1 and SlackEvent.objects.get().retries == 1
    assert services.slack_events_recover() == 0  # not waiting long enough yet
    SlackEvent.objects.update(received_at=event.received_at - timedelta(minutes=5))
    assert services.slack_events_recover() == 1

    from channels_app import slack_app

    assert services.slack_event_process(event_pk=event.pk, handle=slack_app.dispatch_stored) == "done"
    assert services.slack_event_process(event_pk=event.pk, handle=slack_app.dispatch_stored) == "already"
    assert SlackChannel.objects.get(channel_id="C0PUBLIC01").use_for_team_memory
    assert len(slack.calls("conversations.info")) == 1


def test_a_failing_listener_leaves_the_event_for_the_retry_and_a_dead_claim_expires(cast, slack):
    from channels_app import services, slack_app
    from channels_app.models import SlackEvent
    from channels_app.services.slack_events import CLAIM_LEASE_SECONDS

    SlackInstallationFactory(team=cast.team)
    slack.add_channel("C0PUBLIC01", "general", private=False)
    body, _ = signed_event(member_joined("C0PUBLIC01"))
    event = SlackEvent.objects.create(event_id="Ev1", body=body.decode(), event_type="member_joined_channel")
    slack.default("POST", "/api/conversations.info", lambda r: Reply(500, b"down"))
    with pytest.raises(slack_app.EventFailed):
        services.slack_event_process(event_pk=event.pk, handle=slack_app.dispatch_stored)
    event.refresh_from_db()
    assert (event.status, event.attempts) == ("pending", 1) and event.error
    assert not SlackChannel.objects.exists()

    # A worker killed mid-event: its claim is taken over once the lease is past, not before.
    SlackEvent.objects.filter(pk=event.pk).update(status="processing", started_at=timezone.now())
    assert services.slack_event_process(event_pk=event.pk, handle=slack_app.dispatch_stored) == "already"
    SlackEvent.objects.filter(pk=event.pk).update(
        started_at=timezone.now() - timedelta(seconds=CLAIM_LEASE_SECONDS + 1))
    slack._defaults.clear()
    assert services.slack_event_process(event_pk=event.pk, handle=slack_app.dispatch_stored) == "done"
    assert SlackChannel.objects.filter(channel_id="C0PUBLIC01").exists()


def test_forged_events_and_messages_are_not_stored(cast, slack):
    from channels_app.models import SlackEvent

    SlackInstallationFactory(team=cast.team)
    forged, _ = signed_event(member_joined("C0PUBLIC01"), secret="wrong")
    body, headers = signed_event(member_joined("C0PUBLIC01"))
    _, forged_headers = signed_event(member_joined("C0PUBLIC01"), secret="wrong")
    assert Client().post("/slack/events", body, content_type="application/json", **forged_headers).status_code == 401
    message, message_headers = signed_event({"type": "message", "channel": "C0PUBLIC01", "user": "U1", "text": "hi",
                                             "ts": "1.0"})
    assert Client().post("/slack/events", message, content_type="application/json",
                         **message_headers).status_code == 200
    no_id = json.dumps({"type": "event_callback", "event": member_joined("C0PUBLIC01")}).encode()
    ts = str(int(time.time()))
    sig = "v0=" + hmac.new(slack_api.SIGNING_SECRET.encode(), f"v0:{ts}:".encode() + no_id, hashlib.sha256).hexdigest()
    assert Client().post("/slack/events", no_id, content_type="application/json", HTTP_X_SLACK_REQUEST_TIMESTAMP=ts,
                         HTTP_X_SLACK_SIGNATURE=sig).status_code == 400
    assert not SlackEvent.objects.exists()


def test_private_channels_still_wait_for_each_member(cast, slack, post_event):
    SlackInstallationFactory(team=cast.team)
    slack.add_user("U0MEMBER01", cast.member.email)
    slack.add_channel("C0SECRET01", "leadership", private=True, members=[slack_api.BOT_USER_ID, "U0MEMBER01"])
    post_event(member_joined("C0SECRET01", channel_type="G"))
    private = SlackChannel.objects.get(channel_id="C0SECRET01")
    assert private.use_for_team_memory is False
    assert list(selectors.memory_channels_for_user(cast.member)) == []  # until they switch it on
    assert SlackChannelShare.objects.get(channel=private, user=cast.member).use_for_memory is False


def test_an_admin_switching_a_public_channel_off_is_kept_when_the_assistant_rejoins(cast, slack, post_event):
    SlackInstallationFactory(team=cast.team)
    slack.add_channel("C0PUBLIC01", "general", private=False)
    post_event(member_joined("C0PUBLIC01"))
    channel = SlackChannel.objects.get()
    assert list(selectors.memory_channels_for_team(cast.team)) == [channel]
    assert client_for(cast.admin).post(f"/channels/slack/{channel.pk}/team-memory/", {"enabled": "0"}).status_code == 302
    post_event({"type": "channel_left", "channel": "C0PUBLIC01", "actor_id": "U0KICKER01", "event_ts": "2.0"})
    post_event(member_joined("C0PUBLIC01", inviter="U0SOMEONE"))
    channel.refresh_from_db()
    assert channel.active and channel.use_for_team_memory is False
