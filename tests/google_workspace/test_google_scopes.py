"""One Google connection per user, with incremental scopes: reading for memory first; Gmail's
send/compose/modify only when the user lets the assistant act in Gmail; calendar events only
when they turn calendar actions on. Google adds earlier grants (include_granted_scopes)."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import override_settings

from google_workspace import oauth as gmail
from google_workspace.models import GmailAccount, GmailOAuthState
from tests.conftest import client_for
from tests.fakes.gmail_api import ACT, CALENDAR, READONLY, FakeGmail

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake():
    with FakeGmail() as server, override_settings(**server.settings()):
        yield server


def _connect(client, fake, purpose: str, granted: str, code: str) -> dict:
    response = client.post("/hydration/gmail/connect", {"purpose": purpose})
    assert response.status_code == 302
    query = parse_qs(urlsplit(response["Location"]).query)
    fake.codes[code] = granted  # what the user ticked on Google's consent screen
    callback = client.get("/hydration/gmail/callback", {"state": query["state"][0], "code": code})
    assert callback.status_code == 302
    return query


def test_scopes_are_asked_for_only_when_the_user_turns_acting_on(cast, fake):
    client = client_for(cast.member)
    read = _connect(client, fake, "read", READONLY, "c1")
    assert read["scope"] == [" ".join(gmail.READ_SCOPES)] and read["include_granted_scopes"] == ["true"]
    account = GmailAccount.objects.get(user=cast.member)
    assert (account.act_in_gmail, account.act_in_calendar) == (False, False)

    act = _connect(client, fake, "gmail_actions", f"{READONLY} {ACT}", "c2")
    assert set(act["scope"][0].split()) == set(gmail.READ_SCOPES) | set(ACT.split())
    account.refresh_from_db()
    assert account.act_in_gmail and not account.act_in_calendar and gmail.has_scopes(account, gmail.GMAIL_ACT_SCOPES)

    cal = _connect(client, fake, "calendar_actions", CALENDAR, "c3")
    assert CALENDAR in cal["scope"][0] and "gmail.send" not in cal["scope"][0]
    account.refresh_from_db()
    # Google returned the earlier grants too: Gmail acting stays on.
    assert account.act_in_gmail and account.act_in_calendar
    assert GmailAccount.objects.filter(user=cast.member).count() == 1  # one connection per user


def test_a_scope_the_user_unticked_leaves_acting_off(cast, fake):
    client = client_for(cast.member)
    _connect(client, fake, "gmail_actions", READONLY, "c1")
    account = GmailAccount.objects.get(user=cast.member)
    assert not account.act_in_gmail and account.status == "connected"


def test_turning_acting_off_and_bad_input(cast, fake):
    client = client_for(cast.member)
    _connect(client, fake, "gmail_actions", f"{READONLY} {ACT}", "c1")
    states = GmailOAuthState.objects.count()
    assert client.post("/hydration/gmail/connect", {"purpose": "everything"}).status_code == 400
    assert GmailOAuthState.objects.count() == states  # nothing stored
    assert client.post("/hydration/gmail/actions-off", {"purpose": "bogus"}).status_code == 400
    assert GmailAccount.objects.get(user=cast.member).act_in_gmail
    assert client.post("/hydration/gmail/actions-off", {"purpose": "gmail_actions"}).status_code == 302
    account = GmailAccount.objects.get(user=cast.member)
    assert not account.act_in_gmail and account.status == "connected"  # reading for memory goes on
    assert client_for(cast.support).post("/hydration/gmail/actions-off", {"purpose": "gmail_actions"}).status_code == 404


def test_the_memory_page_offers_the_switches(cast, fake):
    from memory.models import FileSystem

    client = client_for(cast.member)
    _connect(client, fake, "read", READONLY, "c1")
    fs = FileSystem.objects.get(owner=cast.member)
    html = client.get(f"/hydration/{fs.pk}/").content.decode()
    assert 'data-act-in-gmail="off"' in html and "Let the assistant act in Gmail" in html
    assert 'data-act-in-calendar="off"' in html and "Turn on calendar actions" in html
