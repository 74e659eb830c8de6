"""Set-up for drafting tests: a connected Gmail account on the fake, inbound mail, items."""

from __future__ import annotations

import time

from hydration import services as hydration_services
from hydration.models import Item, SourceState
from hydration.sources.gmail import GmailSource
from memory import services as memory_services
from tests.agent.google_helpers import connect
from tests.fakes.gmail_api import EMAIL, FakeGmail

__all__ = ["EMAIL", "connect", "fetch_items", "inbound", "now_ms", "sent_reply"]


def now_ms(offset_s: int = 0) -> int:
    return int((time.time() + offset_s) * 1000)


def inbound(fake: FakeGmail, message_id: str, *, subject: str, body: str, sender: str = "Jane Park <jane@initech.test>",
            thread_id: str | None = None, headers: dict | None = None, labels=("INBOX",), at_ms: int | None = None):
    fake.add_message(message_id, internal_ms=at_ms or now_ms(-600), subject=subject, body=body, sender=sender,
                     labels=labels)
    message = fake.messages[message_id]
    message["threadId"] = thread_id or f"t-{message_id}"
    message["payload"]["headers"] += [{"name": "Message-ID", "value": f"<{message_id}@initech.test>"},
                                      *({"name": k, "value": v} for k, v in (headers or {}).items())]
    return message


def sent_reply(fake: FakeGmail, message_id: str, *, thread_id: str, body: str, to: str = "jane@initech.test",
               subject: str = "Re: x"):
    fake.add_message(message_id, internal_ms=now_ms(), subject=subject, body=body, sender=f"Umar <{EMAIL}>",
                     labels=("SENT",))
    message = fake.messages[message_id]
    message["threadId"] = thread_id
    message["payload"]["headers"][1]["value"] = to
    return message


def fetch_items(user) -> list[Item]:
    """What a hydration run stores from Gmail (the source's fetch, then items_store)."""
    fs = memory_services.filesystem_for_user(user)
    SourceState.objects.get_or_create(filesystem=fs, source="gmail")
    state = SourceState.objects.get(filesystem=fs, source="gmail")
    fetched = GmailSource().fetch(fs, dict(state.cursor or {}))
    hydration_services.items_store(filesystem=fs, source="gmail", items=fetched.items, run=None)
    state.cursor = fetched.cursor
    state.save(update_fields=["cursor"])
    return list(Item.objects.filter(filesystem=fs, external_id__in=[i.external_id for i in fetched.items]))
