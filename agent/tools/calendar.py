"""Live Google Calendar actions with the user's own grant (events on the primary calendar):
create an event, invite people to one, change one, cancel one with a note, delete one.
Attendees are notified (sendUpdates=all).

Exactly once without guessing: a created event's id is chosen by us from the execution key
(Calendar accepts client ids in base32hex), so `find` is a GET of that id and a replayed insert
answers 409. An invite adds only attendees not on the event yet; a delete of an event already
gone (410) is done. A change is stated as the event it should become, so `find` (and a retry)
sees whether it is already so and never patches — nor notifies anyone — twice; a cancel of an
event already cancelled is done. A 409 on a change or cancel (a concurrent edit) is treated as
an unknown outcome: the event is read again before anything is redone.
"""

from __future__ import annotations

import base64
import hashlib
from abc import ABC, abstractmethod
from datetime import date, datetime

from django.conf import settings

from google_workspace import oauth
from google_workspace.models import GmailAccount

from .execution import Ambiguous, Done, Rejected
from .google_api import Session, resume_action, run_action

ADAPTER = "google_calendar"
TOOLS = frozenset({"create_calendar_event", "send_calendar_invite", "update_calendar_event",
                   "cancel_calendar_event", "delete_calendar_event"})


def _events(path: str = "") -> str:
    base = f"{settings.GOOGLE_CALENDAR_API_BASE_URL.rstrip('/')}/calendar/v3/calendars/primary/events"
    return f"{base}/{path}" if path else base


def event_id(key: str) -> str:
    """A Calendar event id for an execution key: base32hex (a-v, 0-9), 5 to 1024 characters."""
    return base64.b32hexencode(hashlib.sha256(key.encode()).digest()).decode().lower().rstrip("=")


def when(value: str, name: str) -> dict:
    """An ISO date ("2026-12-03": all day) or date-time; a time without an offset is read in
    the product's time zone."""
    text = (value or "").strip()
    try:
        if len(text) == 10:
            return {"date": date.fromisoformat(text).isoformat()}
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Rejected(f"{name} {value!r} is not an ISO date or date-time (e.g. 2026-12-03T15:00:00+01:00).") from None
    if moment.tzinfo is None:
        return {"dateTime": moment.isoformat(), "timeZone": settings.TIME_ZONE}
    return {"dateTime": moment.isoformat()}


class CalendarAction(ABC):
    adapter = ADAPTER

    def __init__(self, account: GmailAccount, arguments: dict):
        self.account = account
        self.arguments = arguments
        self.session = Session(account, "Google Calendar")

    def wait(self, reason: str) -> None:
        self.session.wait(reason)

    def done(self, event: dict, summary: str) -> Done:
        return Done(provider_id=event.get("id", ""), link=event.get("htmlLink", ""), summary=summary,
                    data={"attendees": [a.get("email") for a in event.get("attendees") or []]})

    def event(self, event_id: str, what: str) -> dict | None:
        response = self.session.request("GET", _events(event_id), replay_safe=True)
        if response.status_code in (404, 410):
            return None
        found = self.session.check(response, what)
        return None if found.get("status") == "cancelled" else found

    def find(self, entry) -> Done | None:
        return None

    @abstractmethod
    def perform(self, entry) -> Done:
        """Do the action once at the provider and say what was done."""


class CreateEvent(CalendarAction):
    def find(self, entry):
        found = self.event(event_id(entry.execution_key), "the event check")
        return self.done(found, "created (found in Calendar after an unconfirmed attempt)") if found else None

    def perform(self, entry):
        a = self.arguments
        start, end = when(a["start"], "start"), when(a["end"], "end")
        body = {"id": event_id(entry.execution_key), "summary": a["title"], "start": start, "end": end,
                "attendees": [{"email": email} for email in a.get("attendees") or []]}
        response = self.session.request("POST", _events(), params={"sendUpdates": "all"}, json=body, replay_safe=True)
        if response.status_code == 409:  # our id exists: an earlier try of this very execution made it
            found = self.find(entry)
            if found is not None:
                return found
        invited = f", invitations sent to {', '.join(a['attendees'])}" if a.get("attendees") else ""
        return self.done(self.session.check(response, "creating the event"), f"event created{invited}")


class InviteToEvent(CalendarAction):
    def perform(self, entry):
        a = self.arguments
        current = self.event(a["event_id"], "the event")
        if current is None:
            raise Rejected(f"Google Calendar has no event {a['event_id']!r}.")
        present = {(x.get("email") or "").casefold() for x in current.get("attendees") or []}
        new = [email for email in a["attendees"] if email.casefold() not in present]
        if not new:  # an earlier try added them: nobody is invited twice
            return self.done(current, "already invited")
        attendees = [*(current.get("attendees") or []), *({"email": email} for email in new)]
        response = self.session.request("PATCH", _events(a["event_id"]), params={"sendUpdates": "all"},
                                        json={"attendees": attendees}, replay_safe=True)
        return self.done(self.session.check(response, "inviting to the event"), f"invited {', '.join(new)}")


class DeleteEvent(CalendarAction):
    def perform(self, entry):
        a = self.arguments
        response = self.session.request("DELETE", _events(a["event_id"]), params={"sendUpdates": "all"},
                                        replay_safe=True)
        if response.status_code == 410:
            return Done(provider_id=a["event_id"], summary="already deleted")
        self.session.check(response, "deleting the event")
        return Done(provider_id=a["event_id"], summary="deleted (attendees notified)")


def _emails(event: dict) -> list[str]:
    return [(x.get("email") or "").casefold() for x in event.get("attendees") or []]


class UpdateEvent(CalendarAction):
    """Change the time, title, place or attendees of an event: only what differs is patched."""

    def changes(self, current: dict) -> dict:
        """The patch that makes `current` what the user asked for; empty when it already is."""
        a = self.arguments
        wanted: dict = {}
        if a.get("title"):
            wanted["summary"] = a["title"]
        if a.get("location"):
            wanted["location"] = a["location"]
        if a.get("start"):
            wanted["start"] = when(a["start"], "start")
        if a.get("end"):
            wanted["end"] = when(a["end"], "end")
        patch = {key: value for key, value in wanted.items() if current.get(key) != value}
        removed = {email.casefold() for email in a.get("remove_attendees") or []}
        kept = [x for x in current.get("attendees") or [] if (x.get("email") or "").casefold() not in removed]
        present = {(x.get("email") or "").casefold() for x in kept}
        added = [{"email": email} for email in dict.fromkeys(a.get("add_attendees") or [])
                 if email.casefold() not in present]
        if added or len(kept) != len(current.get("attendees") or []):
            patch["attendees"] = [*kept, *added]
        return patch

    def current(self) -> dict:
        found = self.event(self.arguments["event_id"], "the event")
        if found is None:
            raise Rejected(f"Google Calendar has no event {self.arguments['event_id']!r} (or it was cancelled).")
        return found

    def find(self, entry):
        current = self.current()
        return None if self.changes(current) else self.done(current, "changed (found in Calendar after an "
                                                                     "unconfirmed attempt), attendees notified")

    def perform(self, entry):
        a = self.arguments
        if not any(a.get(k) for k in ("title", "start", "end", "location", "add_attendees", "remove_attendees")):
            raise Rejected("Nothing to change: give a new title, start, end, location or attendees.")
        current = self.current()
        patch = self.changes(current)
        if not patch:  # an earlier try did it (or it already was so): nobody is notified twice
            return self.done(current, "already so, nothing changed")
        response = self.session.request("PATCH", _events(a["event_id"]), params={"sendUpdates": "all"},
                                        json=patch, replay_safe=False)
        if response.status_code == 409:
            raise Ambiguous("Google Calendar answered 409 (the event changed meanwhile)")
        event = self.session.check(response, "changing the event")
        what = ", ".join({"summary": "title", "attendees": "attendees"}.get(k, k) for k in patch)
        return self.done(event, f"changed {what}; attendees notified")


class CancelEvent(CalendarAction):
    """Cancel an event with a note to its attendees. Calendar's API has no message field on a
    cancellation: the note is put at the top of the event's description (without notifying
    anyone), then the event is deleted with sendUpdates=all, and the cancellation Google sends
    carries it. Every attendee other than the user must be listed: they are the recipients the
    validator checked."""

    def state(self) -> dict | None:
        """The event, {"status": "cancelled"} when it is cancelled or gone (410), None if unknown."""
        response = self.session.request("GET", _events(self.arguments["event_id"]), replay_safe=True)
        if response.status_code == 410:
            return {"status": "cancelled"}
        if response.status_code == 404:
            return None
        return self.session.check(response, "the event")

    def cancelled(self, summary: str) -> Done:
        return Done(provider_id=self.arguments["event_id"], summary=summary,
                    data={"attendees": list(self.arguments.get("attendees") or [])})

    def find(self, entry):
        state = self.state()
        return self.cancelled("cancelled (found in Calendar after an unconfirmed attempt)") \
            if state and state.get("status") == "cancelled" else None

    def perform(self, entry):
        a = self.arguments
        event_id, note = a["event_id"], (a.get("note") or "").strip()
        current = self.state()
        if current is None:
            raise Rejected(f"Google Calendar has no event {event_id!r}.")
        if current.get("status") == "cancelled":
            return self.cancelled("already cancelled")
        me = (self.account.email or "").casefold()
        listed = {email.casefold() for email in a.get("attendees") or []}
        missing = [email for email in _emails(current) if email and email != me and email not in listed]
        if missing:
            raise Rejected(f"The event also has {', '.join(missing)}: list every attendee who will be told "
                           "of the cancellation.")
        description = current.get("description") or ""
        if note and not description.startswith(note):
            response = self.session.request("PATCH", _events(event_id), params={"sendUpdates": "none"},
                                            json={"description": f"{note}\n\n{description}".strip()},
                                            replay_safe=True)
            self.session.check(response, "adding the note to the event")
        response = self.session.request("DELETE", _events(event_id), params={"sendUpdates": "all"},
                                        replay_safe=False)
        if response.status_code == 410:
            return self.cancelled("already cancelled")
        if response.status_code == 409:
            raise Ambiguous("Google Calendar answered 409 (the event changed meanwhile)")
        self.session.check(response, "cancelling the event")
        told = ", ".join(a.get("attendees") or []) or "nobody else"
        return self.cancelled(f"cancelled; {told} notified with the note")


ACTIONS: dict[str, type[CalendarAction]] = {
    "create_calendar_event": CreateEvent, "send_calendar_invite": InviteToEvent,
    "update_calendar_event": UpdateEvent, "cancel_calendar_event": CancelEvent,
    "delete_calendar_event": DeleteEvent,
}


def live(account: GmailAccount | None) -> bool:
    return bool(account and account.act_in_calendar and oauth.configured())


def run(ctx, tool: str, arguments: dict, result_cls):
    return run_action(ACTIONS, "Google Calendar", ctx, tool, arguments, result_cls)


def resume(entry, result_cls, *, last_chance: bool = False):
    return resume_action(ACTIONS, "Google Calendar", entry, result_cls, last_chance=last_chance)
