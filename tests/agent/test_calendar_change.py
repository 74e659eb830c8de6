"""Changing and cancelling a calendar event, live against the fake Calendar API v3 (PATCH and
DELETE with sendUpdates=all): only what differs is patched, a retry after an unknown outcome or
a 409 never notifies anyone twice, a cancel carries its note and must list every attendee, and
the whole path runs through the validator (each added attendee checked as a recipient)."""

import pytest
from django.test import override_settings

from agent import loop as agent_loop
from agent import tools
from agent.models import OutboxEntry
from tests.agent.google_helpers import connect, run
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.gmail_api import EMAIL
from tests.fakes.http import Reply
from tests.validator.helpers import RECORDER, SENT, task_with
from validator.models import Decision

pytestmark = pytest.mark.django_db

EVENTS = "/calendar/v3/calendars/primary/events"
EID = "renewal0001"
CONFLICT = Reply(409, {"error": {"code": 409, "message": "Conflict", "errors": [{"reason": "conflict"}]}})


@pytest.fixture(autouse=True)
def recorder(seam):
    seam.user_message_sender = RECORDER
    SENT.clear()


@pytest.fixture
def event(google):
    google.events[EID] = {
        "id": EID, "status": "confirmed", "summary": "Renewal call", "description": "Agenda: terms",
        "start": {"dateTime": "2026-12-03T15:00:00+01:00"}, "end": {"dateTime": "2026-12-03T15:30:00+01:00"},
        "attendees": [{"email": EMAIL, "self": True}, {"email": "jane@initech.test"}],
    }
    return google.events[EID]


MOVE = {"event_id": EID, "title": "Renewal call (moved)", "start": "2026-12-03T16:00:00+01:00",
        "end": "2026-12-03T16:30:00+01:00", "location": "Room 4", "add_attendees": ["bo@acme.test"],
        "remove_attendees": ["jane@initech.test"]}


def test_update_patches_only_what_differs_and_a_repeat_changes_nothing(cast, google, event):
    connect(cast.member, google)
    result, task = run(cast, "update_calendar_event", MOVE)
    assert result.ok and result.adapter == "google_calendar", result.content
    assert event["summary"] == "Renewal call (moved)" and event["location"] == "Room 4"
    assert event["start"] == {"dateTime": "2026-12-03T16:00:00+01:00"}
    assert [a["email"] for a in event["attendees"]] == [EMAIL, "bo@acme.test"]
    [patch] = google.requests_to("PATCH", f"{EVENTS}/{EID}")
    assert patch.query["sendUpdates"] == "all" and "description" not in patch.json
    assert google.notified == [(EID, "updated", [EMAIL, "bo@acme.test"])]
    again, _ = run(cast, "update_calendar_event", MOVE, task=task)  # the same instruction: the stored outcome
    assert again.ok and "not repeated" in again.content
    fresh, _ = run(cast, "update_calendar_event", MOVE)  # a new task asking for what is already so
    assert fresh.ok and "already so" in fresh.content
    assert len(google.requests_to("PATCH", f"{EVENTS}/{EID}")) == 1 and len(google.notified) == 1


def test_update_after_an_unknown_outcome_or_a_409_notifies_exactly_once(cast, google, event):
    connect(cast.member, google)
    google.fail_after[f"PATCH {EVENTS}/{EID}"] = 1  # applied, then 500: the retry must see it is done
    result, _ = run(cast, "update_calendar_event", {"event_id": EID, "start": "2026-12-03T17:00:00+01:00",
                                                     "end": "2026-12-03T17:30:00+01:00"})
    assert result.ok and "found in Calendar" in result.content, result.content
    assert len(google.requests_to("PATCH", f"{EVENTS}/{EID}")) == 1 and len(google.notified) == 1
    google.script("PATCH", f"{EVENTS}/{EID}", [CONFLICT])  # a concurrent edit: read again, then patch
    second, _ = run(cast, "update_calendar_event", {"event_id": EID, "title": "Renewal"})
    assert second.ok and event["summary"] == "Renewal", second.content
    assert len(google.requests_to("PATCH", f"{EVENTS}/{EID}")) == 3 and len(google.notified) == 2


def test_update_refuses_nothing_to_change_and_an_unknown_event(cast, google, event):
    connect(cast.member, google)
    empty, _ = run(cast, "update_calendar_event", {"event_id": EID})
    assert not empty.ok and "Nothing to change" in empty.content
    gone, _ = run(cast, "update_calendar_event", {"event_id": "nosuchevent1", "title": "x"})
    assert not gone.ok and "no event" in gone.content
    assert google.requests_to("PATCH", f"{EVENTS}/{EID}") == [] and google.notified == []


def test_cancel_with_a_note_lists_every_attendee_and_happens_once(cast, google, event):
    connect(cast.member, google)
    missing, _ = run(cast, "cancel_calendar_event", {"event_id": EID, "note": "Sorry, I'm ill.", "attendees": []})
    assert not missing.ok and "jane@initech.test" in missing.content
    assert event["status"] == "confirmed" and google.notified == []
    google.script("DELETE", f"{EVENTS}/{EID}", [CONFLICT])
    args = {"event_id": EID, "note": "Sorry, I'm ill.", "attendees": ["jane@initech.test"]}
    result, task = run(cast, "cancel_calendar_event", args)
    assert result.ok and "jane@initech.test notified" in result.content, result.content
    assert event["status"] == "cancelled" and event["description"] == "Sorry, I'm ill.\n\nAgenda: terms"
    [note] = google.requests_to("PATCH", f"{EVENTS}/{EID}")
    assert note.query["sendUpdates"] == "none"  # the note is added silently; the cancellation carries it
    assert google.notified == [(EID, "cancelled", [EMAIL, "jane@initech.test"])]
    again, _ = run(cast, "cancel_calendar_event", args)
    assert again.ok and "already cancelled" in again.content and len(google.notified) == 1
    assert OutboxEntry.objects.filter(tool="cancel_calendar_event", status="sent").count() == 2


@pytest.fixture
def claude():
    with FakeAnthropic() as server, override_settings(**server.settings()):
        yield server


def test_update_runs_through_the_validator_and_exactly_once_under_a_retry(cast, google, event, claude):
    connect(cast.member, google)
    task = task_with(cast.member, cast.team, [("user", "Move my renewal call to 4pm and add bo@acme.test to it.")])
    arguments = {"event_id": EID, "start": "2026-12-03T16:00:00+01:00", "end": "2026-12-03T16:30:00+01:00",
                 "add_attendees": ["bo@acme.test"]}
    claude.reply_tool_use("update_calendar_event", {
        **arguments, "justification": '"Move my renewal call to 4pm and add bo@acme.test to it."'})
    claude.reply_tool_use("record_verdict", {"approved": True, "reasoning": "The user asked.", "confidence": "high",
                                             "suggestedNextStep": None})
    claude.reply_text("Moved, and Bo is invited.")
    google.fail_after[f"PATCH {EVENTS}/{EID}"] = 1  # the provider did it but answered 500
    assert agent_loop.run(task).stopped == "done"
    decision = Decision.objects.get(task=task, tool="update_calendar_event")
    assert decision.status == Decision.Status.EXECUTED and decision.arguments["add_attendees"] == ["bo@acme.test"]
    assert len(google.requests_to("PATCH", f"{EVENTS}/{EID}")) == 1 and len(google.notified) == 1
    # The authorized decision run again (a redelivered job): answered from the outbox, not redone.
    ctx = tools.ExecutionContext(user=cast.member, team=cast.team, task=task, decision=decision)
    again = tools.execute(ctx, "update_calendar_event", arguments)
    assert again.ok and "not repeated" in again.content
    assert len(google.requests_to("PATCH", f"{EVENTS}/{EID}")) == 1 and len(google.notified) == 1


def test_an_attendee_the_user_never_named_is_blocked_before_any_call(cast, google, event, claude):
    connect(cast.member, google)
    task = task_with(cast.member, cast.team, [("user", "Cancel my renewal call, I'm ill.")])
    claude.reply_tool_use("cancel_calendar_event", {
        "event_id": EID, "note": "I'm ill.", "attendees": ["jane@initech.test"],
        "justification": '"Cancel my renewal call, I\'m ill."'})
    claude.reply_text("I need your go-ahead to tell jane@initech.test.")
    agent_loop.run(task)
    decision = Decision.objects.get(task=task, tool="cancel_calendar_event")
    assert decision.status == Decision.Status.BLOCKED and "jane@initech.test" in decision.reasoning
    assert event["status"] == "confirmed" and google.requests_to("DELETE", f"{EVENTS}/{EID}") == []
