"""Each source against its real client and a local server speaking its API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from google_workspace import services as google_services
from google_workspace.errors import GoogleError, NotConnected
from google_workspace.models import GmailAccount
from hydration import selectors, services
from hydration.models import Item, SourceState
from hydration.sources.gmail import GmailSource
from hydration.sources.meetings import MeetingsSource
from hydration.sources.slack import SlackSource
from hydration.sources.tasks import TasksSource
from lindy import services as core
from lindy.models import AgentTask
from tests.conftest import client_for
from tests.factories import TeamFactory, member_of
from tests.fakes.gmail_api import FakeGmail
from tests.fakes.slack_history import FakeSlackHistory

from .helpers import channel, installation, share, team_fs, user_fs

pytestmark = pytest.mark.django_db


@pytest.fixture
def slack():
    with FakeSlackHistory(page_size=2) as fake, override_settings(**fake.settings()):
        yield fake


@pytest.fixture
def gmail():
    with FakeGmail(page_size=2) as fake, override_settings(**fake.settings()):
        yield fake


# --- Slack -------------------------------------------------------------------------------------

def _slack_setup(cast):
    inst = installation(cast.team)
    general = channel(cast.team, inst, "C0GENERAL", "general", team_memory=True)
    channel(cast.team, inst, "C0RANDOM", "random")  # the bot is in it, but not switched on for memory
    secret = channel(cast.team, inst, "C0SECRET", "secret", private=True)
    share(secret, cast.member)
    other_private = channel(cast.team, inst, "C0OTHER", "other", private=True)
    share(other_private, cast.member, enabled=False)
    return general, secret


def test_slack_team_reads_only_public_memory_channels_with_pagination(cast, slack):
    _slack_setup(cast)
    for i in range(5):
        slack.post_message("C0GENERAL", f"1700000{i:03d}.000100", f"general message {i}")
    slack.post_message("C0RANDOM", "1700000100.000100", "random chatter")
    slack.post_message("C0SECRET", "1700000100.000100", "private matter")
    slack.post_message("C0GENERAL", "1700000009.000200", "", subtype="channel_join")

    fetched = SlackSource().fetch(team_fs(cast.team), {})

    assert [i.text for i in fetched.items] == [f"#general: general message {i}" for i in range(5)]
    assert fetched.cursor == {"channels": {"C0GENERAL": "1700000004.000100"}}
    history = slack.calls("conversations.history")
    assert {c.form["channel"] for c in history} == {"C0GENERAL"}
    assert len(history) == 3  # five messages, two per page
    assert fetched.items[0].reference == "https://test.slack.com/archives/C0GENERAL/p1700000000000100"
    assert fetched.items[0].author == "U0ALICE"


def test_slack_user_reads_their_enabled_private_channels_from_the_cursor(cast, slack):
    _slack_setup(cast)
    slack.post_message("C0SECRET", "1700000001.000000", "old secret")
    slack.post_message("C0SECRET", "1700000002.000000", "new secret")
    slack.post_message("C0OTHER", "1700000003.000000", "not switched on")
    slack.post_message("C0GENERAL", "1700000003.000000", "public")

    fetched = SlackSource().fetch(user_fs(cast.member), {"channels": {"C0SECRET": "1700000001.000000"}})

    assert [i.text for i in fetched.items] == ["#secret: new secret"]
    assert slack.calls("conversations.history")[0].form["oldest"] == "1700000001.000000"
    with pytest.raises(NotConnected):
        SlackSource().fetch(user_fs(cast.admin), {})


def test_slack_backlog_longer_than_one_run_is_read_to_its_oldest_message(cast, slack, monkeypatch):
    from hydration.sources import slack as slack_source

    monkeypatch.setattr(slack_source, "MAX_PAGES_PER_CHANNEL", 2)  # pages of two: four messages per run
    _slack_setup(cast)
    for i in range(7):
        slack.post_message("C0GENERAL", f"17000000{i:02d}.000100", f"message {i}")
    fs = team_fs(cast.team)
    cursor, seen = {"channels": {"C0GENERAL": "1700000000.000100"}}, []
    for _ in range(3):
        fetched = SlackSource().fetch(fs, cursor)
        seen += [i.text for i in fetched.items]
        cursor = fetched.cursor
    assert sorted(seen) == [f"#general: message {i}" for i in range(1, 7)]
    assert cursor == {"channels": {"C0GENERAL": "1700000006.000100"}}
    # Newer messages after the backlog come next, from the advanced cursor.
    slack.post_message("C0GENERAL", "1700000010.000100", "message 10")
    assert [i.text for i in SlackSource().fetch(fs, cursor).items] == ["#general: message 10"]


def test_slack_honours_429_retry_after(cast, slack):
    _slack_setup(cast)
    slack.post_message("C0GENERAL", "1700000001.000000", "after the rate limit")
    slack.rate_limit_next = 1
    fetched = SlackSource().fetch(team_fs(cast.team), {})
    assert [i.text for i in fetched.items] == ["#general: after the rate limit"]
    assert len(slack.calls("conversations.history")) == 2


def test_slack_error_fails_the_source_and_keeps_its_cursor(cast, slack):
    general, _ = _slack_setup(cast)
    general.channel_id = "C0MISSING"
    general.save()
    fs = team_fs(cast.team)
    SourceState.objects.create(filesystem=fs, source="slack", cursor={"channels": {"C0MISSING": "5.0"}})
    run, _ = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    services.run_execute(run_id=run.pk)
    state = SourceState.objects.get(filesystem=fs, source="slack")
    assert state.status == "error" and "channel_not_found" in state.last_error
    assert state.cursor == {"channels": {"C0MISSING": "5.0"}}


# --- Gmail -------------------------------------------------------------------------------------

def _connected(user, gmail, *, expired=False) -> GmailAccount:
    token = gmail.issue_token()
    return GmailAccount.objects.create(
        user=user, email="umar@gmail.test", access_token=token, refresh_token="refresh-1",
        token_expires_at=timezone.now() + (timedelta(seconds=-5) if expired else timedelta(hours=1)),
    )


def test_gmail_lists_and_fetches_messages_since_the_cursor(cast, gmail):
    _connected(cast.member, gmail)
    gmail.add_message("m1", internal_ms=1_700_000_000_000, subject="Old", body="old news")
    gmail.add_message("m2", internal_ms=1_700_000_100_000, subject="Renewal", body="Jane wants a 2-year renewal.")
    gmail.add_message("m3", internal_ms=1_700_000_200_000, subject="Rich", body="<p>We <b>always</b> cc legal.</p>",
                      html=True)
    gmail.add_message("m4", internal_ms=1_700_000_300_000, subject="Newest", body="Newest mail.")

    fetched = GmailSource().fetch(user_fs(cast.member), {"after_ms": 1_700_000_000_000})

    assert [i.external_id for i in fetched.items] == ["m2", "m3", "m4"]
    assert "Subject: Renewal" in fetched.items[0].text and "Jane wants a 2-year renewal." in fetched.items[0].text
    assert "We always cc legal." in " ".join(fetched.items[1].text.split()).replace(" .", ".")
    assert fetched.items[0].author == "jane@initech.test"
    assert fetched.items[0].reference == "https://mail.google.com/mail/u/0/#all/m2"
    assert fetched.cursor == {"after_ms": 1_700_000_300_000}
    listing = gmail.requests_to("GET", "/gmail/v1/users/me/messages")
    assert listing[0].query["q"] == "after:1700000000"
    assert len(listing) == 2  # pages of two


def test_gmail_backlog_larger_than_a_run_is_taken_oldest_first_and_nothing_is_skipped(cast, gmail, monkeypatch):
    from hydration.sources import gmail as gmail_source

    monkeypatch.setattr(gmail_source, "MAX_MESSAGES", 2)
    _connected(cast.member, gmail)
    for n in range(6):
        gmail.add_message(f"m{n}", internal_ms=1_700_000_000_000 + n * 60_000, subject=f"Mail {n}", body=f"body {n}")
    fs = user_fs(cast.member)
    # A first connection starts from the newest mail, not the whole mailbox.
    first = GmailSource().fetch(fs, {})
    assert [i.external_id for i in first.items] == ["m4", "m5"]
    # With a cursor, a backlog is worked through from its oldest message, run after run.
    cursor, seen = {"after_ms": 1_700_000_000_000}, []
    for _ in range(4):
        fetched = GmailSource().fetch(fs, cursor)
        seen += [i.external_id for i in fetched.items]
        cursor = fetched.cursor
    assert seen == ["m1", "m2", "m3", "m4", "m5"]
    assert cursor == {"after_ms": 1_700_000_000_000 + 5 * 60_000}


def test_gmail_refreshes_an_expired_token(cast, gmail):
    account = _connected(cast.member, gmail, expired=True)
    gmail.add_message("m1", internal_ms=1_700_000_000_000, subject="Hi", body="hello there friend")
    fetched = GmailSource().fetch(user_fs(cast.member), {})
    assert [i.external_id for i in fetched.items] == ["m1"]
    assert gmail.requests_to("POST", "/token")[0].form["grant_type"] == "refresh_token"
    account.refresh_from_db()
    assert account.token_expires_at > timezone.now()


def test_gmail_revoked_access_is_a_disconnected_status_not_an_error(cast, gmail):
    account = _connected(cast.member, gmail, expired=True)
    gmail.refresh_tokens.clear()
    fs = user_fs(cast.member)
    with pytest.raises(NotConnected):
        GmailSource().fetch(fs, {})
    account.refresh_from_db()
    assert account.status == "disconnected" and "invalid_grant" in account.status_detail
    run, _ = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    run = services.run_execute(run_id=run.pk)
    assert run.sources["gmail"]["status"] == "not_connected"
    token_calls = len(gmail.requests_to("POST", "/token"))
    # The next run does not hammer Google with a revoked token.
    run2, _ = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    services.run_execute(run_id=run2.pk)
    assert len(gmail.requests_to("POST", "/token")) == token_calls
    assert SourceState.objects.get(filesystem=fs, source="gmail").status == "not_connected"


def test_gmail_is_for_user_memory_only(cast):
    assert not GmailSource().applies_to(team_fs(cast.team))
    assert "gmail" not in {s.source for s in selectors.source_states(team_fs(cast.team))}


def test_gmail_oauth_connect_stores_tokens_server_side(cast, gmail):
    client = client_for(cast.member)
    response = client.post("/hydration/gmail/connect")
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(gmail.url + "/o/oauth2/v2/auth?")
    from urllib.parse import parse_qs, urlsplit

    query = parse_qs(urlsplit(location).query)
    assert query["client_id"] == [gmail.settings()["GMAIL_CLIENT_ID"]] and query["access_type"] == ["offline"]
    state = query["state"][0]
    callback = client.get("/hydration/gmail/callback", {"state": state, "code": "good-code"})
    assert callback.status_code == 302
    account = GmailAccount.objects.get(user=cast.member)
    assert account.status == "connected" and account.email == "umar@gmail.test"
    assert account.refresh_token == "refresh-1" and account.access_token.startswith("ya29.")
    page = client.get(callback["Location"]).content.decode()
    assert "umar@gmail.test" in page and account.access_token not in page and "refresh-1" not in page
    # A state is single-use.
    again = client.get("/hydration/gmail/callback", {"state": state, "code": "good-code"}, follow=True)
    assert "expired or was already used" in again.content.decode()
    # Another user's state does not connect this user.
    other = client_for(cast.admin)
    assert other.get("/hydration/gmail/callback", {"state": "forged", "code": "x"}).status_code == 302
    assert not GmailAccount.objects.filter(user=cast.admin).exists()
    client.post("/hydration/gmail/disconnect")
    account.refresh_from_db()
    assert account.status == "disconnected" and account.access_token == "" and account.refresh_token == ""


def test_gmail_service_rejects_a_bad_code(cast, gmail):
    url = google_services.gmail_connect_start(user=cast.member, redirect_uri="http://testserver/cb")
    state = url.split("state=")[1]
    with pytest.raises(GoogleError):
        google_services.gmail_account_connect(user=cast.member, state=state, code="bad", redirect_uri="http://testserver/cb")
    assert not GmailAccount.objects.filter(user=cast.member).exists()


# --- Meetings and tasks -----------------------------------------------------------------------

def test_meetings_for_user_and_team(cast):
    now = timezone.now()
    own = core.meeting_create(team=cast.team, owner=cast.member, title="Own", notes="n", occurred_at=now)
    shared = core.meeting_create(team=cast.team, owner=cast.admin, title="Shared", notes="n", occurred_at=now,
                                 shared_with=[cast.member])
    public = core.meeting_create(team=cast.team, owner=cast.admin, title="Public", notes="n", occurred_at=now, public=True)
    core.meeting_create(team=cast.team, owner=cast.admin, title="Private to admin", notes="n", occurred_at=now)
    core.meeting_create(team=cast.other_team, owner=cast.other_admin, title="Globex", notes="n", occurred_at=now,
                        public=True)

    user = MeetingsSource().fetch(user_fs(cast.member), {})
    assert [i.external_id for i in user.items] == [f"meeting-{own.pk}", f"meeting-{shared.pk}"]
    team = MeetingsSource().fetch(team_fs(cast.team), {})
    assert [i.external_id for i in team.items] == [f"meeting-{public.pk}"]
    again = MeetingsSource().fetch(team_fs(cast.team), team.cursor)
    assert again.items == []


def test_tasks_for_user_and_team_and_new_events_later(cast):
    mine = core.task_create(team=cast.team, owner=cast.member, title="Mine", visibility=AgentTask.Visibility.PRIVATE)
    core.task_event_add(task=mine, actor="user", content="Always cc Priya.")
    public = core.task_create(team=cast.team, owner=cast.admin, title="Public", visibility=AgentTask.Visibility.PUBLIC)
    core.task_event_add(task=public, actor="assistant", content="Done.")
    hidden = core.task_create(team=cast.team, owner=cast.admin, title="Hidden", visibility=AgentTask.Visibility.PRIVATE)
    core.task_event_add(task=hidden, actor="user", content="secret")

    user = TasksSource().fetch(user_fs(cast.member), {})
    assert [i.title for i in user.items] == ["Mine"] and "User: Always cc Priya." in user.items[0].text
    team = TasksSource().fetch(team_fs(cast.team), {})
    assert [i.title for i in team.items] == ["Public"]

    assert TasksSource().fetch(user_fs(cast.member), user.cursor).items == []
    core.task_event_add(task=mine, actor="assistant", content="Will do.")
    later = TasksSource().fetch(user_fs(cast.member), user.cursor)
    assert [i.external_id for i in later.items] == [f"task-{mine.pk}@2"]
    assert later.items[0].text == "Task: Mine\nAssistant: Will do."
    # A followed suggestion is Lindy's note: hydrated as such, never as the user's words.
    core.task_event_add(task=mine, actor="system", content="Follow the validator's suggestion: ask first.")
    note = TasksSource().fetch(user_fs(cast.member), later.cursor).items[0].text
    assert note == "Task: Mine\nLindy (system note, not the user): Follow the validator's suggestion: ask first."


def test_items_are_unique_per_filesystem_source_and_external_id(cast):
    fs = user_fs(cast.member)
    other_team = TeamFactory(name="Initech")
    member_of(other_team)
    fetched = MeetingsSource().fetch(fs, {})
    core.meeting_create(team=cast.team, owner=cast.member, title="T", notes="n", occurred_at=timezone.now())
    fetched = MeetingsSource().fetch(fs, {})
    assert services.items_store(filesystem=fs, source="meetings", items=fetched.items, run=None) == 1
    assert services.items_store(filesystem=fs, source="meetings", items=fetched.items, run=None) == 0
    assert Item.objects.filter(filesystem=fs).count() == 1
    # The same external id in another file system is another item.
    assert services.items_store(filesystem=team_fs(cast.team), source="meetings", items=fetched.items, run=None) == 1


def test_slack_thread_replies_are_read_with_their_parent_even_days_later(cast, slack):
    _slack_setup(cast)
    source = SlackSource()
    fs = team_fs(cast.team)
    slack.post_message("C0GENERAL", "1700000001.000100", "Who owns the launch checklist?")
    slack.post_message("C0GENERAL", "1700000002.000100", "Jane does", thread_ts="1700000001.000100")
    slack.post_message("C0GENERAL", "1700000003.000100", "unrelated")
    fetched = source.fetch(fs, {})
    texts = [item.text for item in fetched.items]
    assert '#general, replying in a thread on "Who owns the launch checklist?": Jane does' in texts
    assert len(texts) == 3

    # A reply two days later: its parent is behind the cursor, the lookback finds the thread.
    slack.post_message("C0GENERAL", "1700172800.000100", "Moved to Sam", thread_ts="1700000001.000100")
    later = source.fetch(fs, fetched.cursor)
    assert [item.text for item in later.items] == [
        '#general, replying in a thread on "Who owns the launch checklist?": Moved to Sam']
    assert later.items[0].external_id.endswith(":1700172800.000100")
    assert source.fetch(fs, later.cursor).items == []  # nothing new: nothing read twice


def test_storing_items_is_one_statement_and_nothing_fetched_is_none(cast, django_assert_num_queries):
    """A run stores each source's items in one INSERT that counts the new ones itself (no COUNT
    before and after), and a source that fetched nothing costs no statement."""
    fs = user_fs(cast.member)
    for n in range(3):
        core.meeting_create(team=cast.team, owner=cast.member, title=f"T{n}", notes="n", occurred_at=timezone.now())
    fetched = MeetingsSource().fetch(fs, {})
    with django_assert_num_queries(1):
        assert services.items_store(filesystem=fs, source="meetings", items=fetched.items[:2], run=None) == 2
    with django_assert_num_queries(1):
        assert services.items_store(filesystem=fs, source="meetings", items=fetched.items, run=None) == 1
    with django_assert_num_queries(0):
        assert services.items_store(filesystem=fs, source="meetings", items=[], run=None) == 0
    assert Item.objects.filter(filesystem=fs).count() == 3


def test_sources_with_nothing_to_store_are_recorded_together_in_one_statement(cast):
    """Meetings store their items with their cursor (one transaction); Slack and Gmail (not
    connected) and tasks (nothing new) only record their state: one UPDATE for all three."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from hydration.models import Run

    fs = user_fs(cast.member)
    meeting = core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                                  notes="We always deploy to staging before prod.")
    with CaptureQueriesContext(connection) as captured:
        run = services.run_now_sync(filesystem=fs, trigger="manual")
    assert run.status == Run.Status.SUCCEEDED
    updates = [q["sql"] for q in captured if q["sql"].startswith('UPDATE "hydration_sourcestate"')]
    assert len(updates) == 2, updates
    states = {s.source: s for s in SourceState.objects.filter(filesystem=fs)}
    assert states["slack"].status == states["gmail"].status == SourceState.Status.NOT_CONNECTED
    assert states["gmail"].last_error == "Gmail is not connected." and states["gmail"].last_error_at
    assert states["tasks"].status == SourceState.Status.OK and states["tasks"].last_success_at
    assert states["meetings"].cursor == {"after_id": meeting.pk} and states["meetings"].last_success_at
    assert run.sources["meetings"] == {"status": "ok", "items": 1, "fetched": 1}
