"""Initialization's fetch: the threads the user answered in the last months, from the Gmail API
(the user's own Google connection, google_workspace), sanitized and formatted for the composer
and for replaying drafts (each entry holds a drafting.prompts.Thread as a dict).

An answered thread is a message in the user's SENT mail whose thread holds an earlier message
from someone else: that message is what the user answered, the sent one is what they wrote."""

from __future__ import annotations

import re
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from google_workspace.client import GoogleClient
from google_workspace.errors import NotConnected
from google_workspace.messages import body_text, headers_of
from google_workspace.models import GmailAccount

from .. import prompts as draft_prompts
from .text import strip_quotes

MAX_SENT = 300  # sent messages looked at
MAX_THREADS = 200
MAX_BODY = 4000
PAGE = 100
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean(text: str) -> str:
    return _CONTROL.sub("", strip_quotes(text or ""))[:MAX_BODY].strip()


def _at(message: dict) -> str:
    ms = int(message.get("internalDate") or 0)
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat() if ms else ""


def _message(message: dict) -> draft_prompts.Message:
    payload = message.get("payload") or {}
    headers = headers_of(payload)
    return draft_prompts.Message(sender=headers.get("from", ""), to=headers.get("to", ""),
                                 subject=headers.get("subject", "")[:300],
                                 body=_clean(body_text(payload) or message.get("snippet", "")), at=_at(message))


def fetch_answered_threads(user, *, months: int) -> list[dict]:
    account = GmailAccount.objects.filter(user=user).first()
    if account is None or account.status != GmailAccount.Status.CONNECTED:
        raise NotConnected("Gmail is not connected: connect it to initialize the context document.")
    after = int((timezone.now() - timedelta(days=30 * months)).timestamp())
    client = GoogleClient(account)
    try:
        ids = [m["id"] for m in client.pages("messages", {"q": f"in:sent after:{after}", "maxResults": PAGE},
                                             limit=MAX_SENT)]
        entries, threads_seen = [], {}
        for message_id in ids[:MAX_SENT]:
            sent = client.get(f"messages/{message_id}", {"format": "full"})
            thread_id = sent.get("threadId", "")
            if thread_id not in threads_seen:
                threads_seen[thread_id] = client.get(f"threads/{thread_id}", {"format": "full"}).get("messages") or []
            messages = sorted(threads_seen[thread_id], key=lambda m: int(m.get("internalDate") or 0))
            position = next((i for i, m in enumerate(messages) if m.get("id") == message_id), None)
            if position is None:
                continue
            before = [m for m in messages[:position] if "SENT" not in (m.get("labelIds") or [])]
            if not before:
                continue  # the user started this thread: nothing answered
            earlier = [_message(m) for m in messages[:position]]
            thread = draft_prompts.Thread(user_name=user.display_name,
                                          user_email=account.email or user.email, last=_message(before[-1]),
                                          earlier=[m for m in earlier if m != _message(before[-1])][-5:])
            reply = _message(sent)
            if not reply.body:
                continue
            entries.append({"thread": asdict(thread), "sent": reply.body, "sent_at": reply.at, "thread_id": thread_id})
            if len(entries) >= MAX_THREADS:
                break
    finally:
        client.close()
    entries.sort(key=lambda e: e["sent_at"])
    return entries
