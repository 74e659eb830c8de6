"""Live Google Calendar actions through the real client code against the fake Calendar API:
create with a client-chosen id (exactly once), invite only the new attendees, delete; bad
dates refused before any call; a revoked grant."""

import pytest

from agent import services as agent_services
from agent.models import OutboxEntry
from agent.tools.calendar import event_id
from tests.agent.google_helpers import connect, run
from tests.fakes.http import Reply

pytestmark = pytest.mark.django_db

EVENTS = "/calendar/v3/calendars/primary/events"
EVENT = {"title": "Renewal call", "start": "2026-12-03T15:00:00+01:00", "end": "2026-12-03T15:30:00+01:00",
         "attendees": ["jane@initech.test"]}


def test_create_invites_attendees_with_our_event_id_and_links_it(cast, google):
    connect(cast.member, google)
    result, task = run(cast, "create_calendar_event", EVENT)
    assert result.ok and result.adapter == "google_calendar", result.content
    [(eid, event)] = google.events.items()
    entry = OutboxEntry.objects.get(task=task)
    assert eid == event_id(entry.execution_key) and entry.provider_id == eid
    assert event["summary"] == "Renewal call" and event["attendees"] == [{"email": "jane@initech.test"}]
    assert event["start"] == {"dateTime": "2026-12-03T15:00:00+01:00"} and event["sendUpdates"] == "all"
    assert entry.status == "sent" and entry.link == event["htmlLink"] and entry.link in result.content
    again, _ = run(cast, "create_calendar_event", EVENT, task=task)
    assert again.ok and len(google.events) == 1


def test_an_insert_that_answered_500_after_creating_is_found_not_duplicated(cast, google):
    connect(cast.member, google)
    google.fail_after[f"POST {EVENTS}"] = 1
    result, _ = run(cast, "create_calendar_event", {**EVENT, "attendees": []})
    assert result.ok, result.content
    assert len(google.events) == 1 and len(google.requests_to("POST", EVENTS)) == 2  # the replay met 409


def test_invite_adds_only_new_attendees_and_delete_is_done_once(cast, google):
    connect(cast.member, google)
    created, _ = run(cast, "create_calendar_event", EVENT)
    eid = created.data["provider_id"]
    invited, _ = run(cast, "send_calendar_invite", {"event_id": eid, "attendees": ["jane@initech.test", "bo@acme.test"]})
    assert invited.ok and "bo@acme.test" in invited.content, invited.content
    assert [a["email"] for a in google.events[eid]["attendees"]] == ["jane@initech.test", "bo@acme.test"]
    same, _ = run(cast, "send_calendar_invite", {"event_id": eid, "attendees": ["bo@acme.test"]})
    assert same.ok and "already invited" in same.content
    assert len(google.requests_to("PATCH", f"{EVENTS}/{eid}")) == 1
    deleted, _ = run(cast, "delete_calendar_event", {"event_id": eid})
    assert deleted.ok and google.events[eid]["status"] == "cancelled"
    gone, _ = run(cast, "delete_calendar_event", {"event_id": "unknownevent1"})
    assert not gone.ok and "no such item" in gone.content


def test_bad_dates_fail_with_the_reason_before_any_call(cast, google):
    connect(cast.member, google)
    result, _ = run(cast, "create_calendar_event", {**EVENT, "start": "tomorrow at 3"})
    assert not result.ok and "not an ISO date" in result.content
    assert google.requests_to("POST", EVENTS) == [] and OutboxEntry.objects.get().status == "failed"
    day, _ = run(cast, "create_calendar_event", {**EVENT, "title": "Offsite", "start": "2026-12-04", "end": "2026-12-05"})
    assert day.ok and google.events[day.data["provider_id"]]["start"] == {"date": "2026-12-04"}


def test_calendar_429_then_success_and_a_revoked_grant(cast, google):
    account = connect(cast.member, google)
    google.script("POST", EVENTS, [Reply(429, {"error": {"code": 429, "message": "Rate Limit Exceeded"}},
                                         {"Retry-After": "0"})])
    result, _ = run(cast, "create_calendar_event", EVENT)
    assert result.ok and len(google.events) == 1
    google.revoke()
    revoked, _ = run(cast, "delete_calendar_event", {"event_id": result.data["provider_id"]})
    assert not revoked.ok and "reconnect Gmail" in revoked.content
    account.refresh_from_db()
    assert account.status == "disconnected"
    assert agent_services.outbox_resume(older_than_seconds=0) == 0  # failed is final: nothing to resume
