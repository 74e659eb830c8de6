"""Which inbound emails never get a draft, decided from Gmail's own message (headers, labels)
before any model is asked. Pure: no database, no network.

Skipped: mail from the user (their own sent mail and drafts), newsletters and mailing lists
(List-Unsubscribe, List-Id, Precedence: bulk/list/junk), automated mail (Auto-Submitted other
than "no", X-Autoreply, auto-responders), no-reply and robot senders, Gmail's Promotions /
Social / Updates / Forums categories, spam, trash, drafts and chats. What passes goes to the
model, which may still answer that no reply is needed (drafting.prompts.NO_REPLY)."""

from __future__ import annotations

import re
from email.utils import getaddresses, parseaddr

ROBOT_LOCAL = re.compile(
    r"^(no[-_.]?reply|do[-_.]?not[-_.]?reply|noreply|mailer[-_.]?daemon|postmaster|bounces?|notifications?|"
    r"notify|alerts?|news(letter)?|marketing|digest|automated|system|billing[-_.]?noreply)"
    r"([-+_.].*)?$", re.I)
SKIP_LABELS = {
    "CATEGORY_PROMOTIONS": "a promotion (Gmail's Promotions category)",
    "CATEGORY_SOCIAL": "a social network notification (Gmail's Social category)",
    "CATEGORY_UPDATES": "an automated update (Gmail's Updates category)",
    "CATEGORY_FORUMS": "a mailing list or forum (Gmail's Forums category)",
    "SPAM": "spam", "TRASH": "in the trash", "DRAFT": "a draft", "CHAT": "a chat", "SENT": "mail the user sent",
}


def address(text: str) -> str:
    return parseaddr(text or "")[1].strip().casefold()


def skip_reason(*, headers: dict[str, str], labels: list[str], own_addresses: set[str]) -> str:
    """Why this email gets no draft, or "" when the model should decide. `headers` are
    lower-cased names (hydration.gmail.headers_of)."""
    sender = address(headers.get("from", ""))
    if not sender:
        return "No sender address."
    if sender in own_addresses:
        return "Mail from the user."
    for label, why in SKIP_LABELS.items():
        if label in (labels or []):
            return f"Skipped: {why}."
    if headers.get("list-unsubscribe") or headers.get("list-id"):
        return "A newsletter or mailing list (List-Unsubscribe / List-Id)."
    if headers.get("precedence", "").strip().lower() in ("bulk", "list", "junk"):
        return f"Bulk mail (Precedence: {headers['precedence'].strip().lower()})."
    auto = headers.get("auto-submitted", "").strip().lower()
    if auto and auto != "no":
        return f"Automated mail (Auto-Submitted: {auto})."
    if headers.get("x-autoreply") or headers.get("x-autorespond") or headers.get("x-auto-response-suppress", "").lower() in ("all", "oof"):
        return "An automatic reply."
    local = sender.split("@")[0]
    if ROBOT_LOCAL.match(local):
        return f"An automated sender ({sender})."
    recipients = {a.casefold() for _, a in getaddresses([headers.get("to", ""), headers.get("cc", "")]) if a}
    if own_addresses and recipients and not recipients & own_addresses:
        return "The user is not a recipient (Bcc or a list)."
    return ""
