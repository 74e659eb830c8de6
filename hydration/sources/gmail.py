"""Gmail, for user file systems only: the messages that arrived since the last run, through
the Gmail API (list with `q=after:`, then each message).

The list has no label filter, so the user's own sent mail comes too (Gmail leaves out only
spam and trash): marked as the owner's words (`_Senders`), it is what the validator's
standing-permission rule and email drafting read (selectors.sent_mail). Mail the assistant sent
for them is not: it carries the execution record's `X-Lindy-Execution` header (and a Message-ID
made from it, agent/tools/gmail.py), and is the assistant's, so model-written text never becomes
a standing permission or a source of allowed recipients."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parseaddr

from google_workspace.client import GoogleClient
from google_workspace.messages import body_text as _body
from google_workspace.messages import headers_of as _headers
from google_workspace.models import GmailAccount
from lindy.models import User

from ..models import Item
from .base import Fetched, NotConnected, Source, SourceItem

PAGE_SIZE = 500  # the most messages.list returns per page
MAX_MESSAGES = 500  # fetched (one request each) per run
MAX_LISTED = 20_000  # ids listed per run to find the oldest not yet taken
MAX_BODY_CHARS = 8000
# What agent/tools/gmail.py puts on every message the assistant sends (from the outbox's execution
# key). Read here by name: hydration sits below the agent and does not import it.
EXECUTION_HEADER = "x-lindy-execution"
EXECUTION_MESSAGE_ID = "<lindy."


def _address(text: str) -> str:
    return parseaddr(text or "")[1].strip().casefold()


class _Senders:
    """Whose words a message is. The owner's only when Gmail filed it as SENT from their own
    address: a From header alone is written by whoever sent the mail, so it is not enough."""

    def __init__(self, filesystem, account: GmailAccount):
        owner = filesystem.owner
        self.own = {_address(a) for a in (account.email, owner.email) if a}
        teams = owner.memberships.values("team_id")
        self.team = {_address(e) for e in User.objects.filter(memberships__team_id__in=teams)
                     .values_list("email", flat=True)} - self.own

    def kind(self, sender: str, labels, headers: dict | None = None) -> str:
        address = _address(sender)
        headers = headers or {}
        if address in self.own and (headers.get(EXECUTION_HEADER)
                                    or headers.get("message-id", "").startswith(EXECUTION_MESSAGE_ID)):
            return Item.AuthorKind.ASSISTANT
        if address in self.own and "SENT" in (labels or []):
            return Item.AuthorKind.OWNER
        if address in self.team:
            return Item.AuthorKind.TEAMMATE
        return Item.AuthorKind.EXTERNAL


class GmailSource(Source):
    kind = "gmail"
    scopes = frozenset({"user"})

    def fetch(self, filesystem, cursor: dict) -> Fetched:
        account = GmailAccount.objects.filter(user=filesystem.owner).first()
        if account is None or account.status != GmailAccount.Status.CONNECTED:
            raise NotConnected("Gmail is not connected." if account is None else
                               f"Gmail is disconnected: {account.status_detail or 'connect it again.'}")
        after_ms = int(cursor.get("after_ms", 0))
        client = GoogleClient(account)
        senders = _Senders(filesystem, account)
        try:
            query = f"after:{after_ms // 1000}" if after_ms else ""
            # A first run (no cursor) starts from the newest mail rather than the whole mailbox.
            limit = MAX_LISTED if after_ms else MAX_MESSAGES
            ids = [m["id"] for m in client.pages("messages", {"maxResults": PAGE_SIZE, "q": query}, limit=limit)]
            # Gmail lists newest first. With a backlog larger than one run takes, take the
            # OLDEST of it: the cursor then stops at the newest message taken, and the next
            # run continues from there, so nothing in between is skipped.
            taken = ids[-MAX_MESSAGES:] if after_ms else ids[:MAX_MESSAGES]
            items, newest = [], after_ms
            for message_id in taken:
                message = client.get(f"messages/{message_id}", {"format": "full"})
                internal = int(message.get("internalDate") or 0)
                # `after:` has a one-second grain: drop what the last run already took.
                if internal and internal <= after_ms:
                    continue
                newest = max(newest, internal)
                payload = message.get("payload") or {}
                headers = _headers(payload)
                body = _body(payload) or message.get("snippet", "")
                subject = headers.get("subject", "(no subject)")
                sender = headers.get("from", "")
                items.append(SourceItem(
                    external_id=message["id"], author=sender, title=subject[:300],
                    author_kind=senders.kind(sender, message.get("labelIds"), headers),
                    author_name=(parseaddr(sender)[0] or parseaddr(sender)[1] or sender)[:255],
                    reference=f"https://mail.google.com/mail/u/0/#all/{message['id']}",
                    occurred_at=datetime.fromtimestamp(internal / 1000, tz=UTC) if internal else datetime.now(tz=UTC),
                    text=(f"Email from {headers.get('from', '?')} to {headers.get('to', '?')}\n"
                          f"Subject: {subject}\n{body[:MAX_BODY_CHARS]}"),
                ))
        finally:
            client.close()
        items.sort(key=lambda item: item.occurred_at)
        return Fetched(items=items, cursor={"after_ms": newest})

    def describe(self, filesystem) -> list[str]:
        account = GmailAccount.objects.filter(user=filesystem.owner).first()
        if account is None:
            return ["Gmail: not connected"]
        return [f"Gmail: {account.email or 'account'} ({account.get_status_display().lower()})"]
