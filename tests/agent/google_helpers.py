"""A connected Google account against the fake Google servers (tests/fakes/gmail_api.py)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from agent import tools
from google_workspace.models import GmailAccount
from tests.fakes.gmail_api import ACT, CALENDAR, EMAIL, READONLY, FakeGmail
from tests.validator.helpers import task_with


def connect(user, fake: FakeGmail, *, gmail: bool = True, calendar: bool = True) -> GmailAccount:
    scopes = " ".join([READONLY, *(ACT.split() if gmail else []), *([CALENDAR] if calendar else [])])
    return GmailAccount.objects.create(
        user=user, email=EMAIL, access_token=fake.issue_token(), refresh_token="refresh-1",
        token_expires_at=timezone.now() + timedelta(hours=1), scopes=scopes, act_in_gmail=gmail,
        act_in_calendar=calendar,
    )


def incoming(fake: FakeGmail, message_id: str = "m1", *, thread_id: str = "t-renewal") -> None:
    """An email from Jane in a thread, with the headers a reply must follow."""
    fake.add_message(message_id, internal_ms=1_700_000_000_000, subject="Renewal terms",
                     body="Can you confirm the 2-year renewal?", sender="Jane Park <jane@initech.test>")
    message = fake.messages[message_id]
    message["threadId"] = thread_id
    message["payload"]["headers"] += [
        {"name": "Message-ID", "value": "<jane-2@initech.test>"},
        {"name": "References", "value": "<jane-1@initech.test>"},
        {"name": "Date", "value": "Tue, 14 Nov 2023 22:13:20 +0000"},
    ]


def run(cast, tool: str, arguments: dict, *, task=None):
    task = task or task_with(cast.member, cast.team, [("user", "do it")])
    return tools.execute(tools.ExecutionContext(user=cast.member, team=cast.team, task=task), tool, arguments), task
