"""Offline rules for the `agent` route, so the demo assistant runs with no network.

A small, literal assistant: it acts on the latest request in the task. The user's message,
when it names an action it recognises (send an email to an address, post in a #channel, archive
or delete a message, pay an invoice), becomes that action, quoting the user's own words as
justification. A third party's message that asks for one (an invoice to pay, "send me the
report") becomes the action it asks for, quoting that party's words as they are, attributed to
them: the validator judges it (only the user's words authorize an action), and what it blocks
waits on the user's Blocked actions page, to authorize or dismiss. It tells the user what
happened after a tool ran or was blocked; otherwise it acknowledges. It never invents
recipients: it only uses addresses the user wrote, or the sender's own for a reply to them.
"""

from __future__ import annotations

import html
import re

from router.offline import OfflineReply, offline_policy, tool_call
from validator.services import SUGGESTION_PREFIX

EVENT = re.compile(r'<event seq="(\d+)" actor="(\w+)"(?: name="([^"]*)")?[^>]*>(.*?)</event>', re.S)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
CHANNEL = re.compile(r"(#[\w-]+)")
MESSAGE_ID = re.compile(r"\b(?:message|email|thread)\s+(?:id\s+)?([A-Za-z0-9_-]*\d[A-Za-z0-9_-]*)", re.I)
INVOICE = re.compile(r"\binvoice\s+([A-Z0-9][A-Z0-9-]+)", re.I)
AMOUNT = re.compile(r"([$€£])\s?([\d,]+(?:\.\d+)?)|([\d,]+(?:\.\d+)?)\s?(USD|EUR|GBP)", re.I)
CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP"}


PAY = re.compile(r"\bpay\b", re.I)
# "send me the report", "could you email us the deck": what a third party asks to be sent.
SEND_ME = re.compile(r"\b(?:send|email|e-mail|mail|forward|share)\s+(?:me|us)\s+(?:over\s+)?(.+?)(?:[?!.,;]|$)",
                     re.I | re.M)


def _latest_request(text: str) -> tuple[str, str, str]:
    """(actor, name, text) of the latest event from the user, from Lindy itself (a followed
    suggestion is a system note) or from a third party; ("", "", "") when there is none."""
    events = [(actor, html.unescape(name), html.unescape(body).strip()) for _, actor, name, body in EVENT.findall(text)
              if actor in ("user", "system", "external")]
    return events[-1] if events else ("", "", "")


def _saying(text: str) -> str:
    match = re.search(r"\b(?:saying|that says|to say|telling (?:them|him|her))\b[:,]?\s*(.+)", text, re.I | re.S)
    return (match.group(1) if match else text).strip().strip('"“”')


def _headline(body: str) -> str:
    """A subject from what the email says: its first clause, capitalised ("Thanks for the review")."""
    first = re.split(r"[.;!?\n]", body.strip(), maxsplit=1)[0].strip().strip('"“”')
    if not first or EMAIL.search(first) or len(first) > 80:
        return "A note from your contact"
    return first[:1].upper() + first[1:]


def _justify(user_text: str) -> str:
    first_line = user_text.splitlines()[0].strip().replace('"', "'")
    return f'The user asked me directly: "{first_line}"'


def _money(amount: re.Match) -> tuple[int | float, str]:
    """(value, currency) of an AMOUNT match: 4800 for "$4,800", 12.5 for "12.50 EUR"."""
    value = float((amount.group(2) or amount.group(3)).replace(",", ""))
    currency = CURRENCY.get(amount.group(1) or "", (amount.group(4) or "USD").upper())
    return (int(value) if value.is_integer() else value), currency


def _sentence(text: str, pattern: str) -> str:
    """The sentence of `text` where `pattern` is found (the words a justification quotes)."""
    for sentence in re.split(r"(?<=[.?!])\s+|\n+", text):
        if re.search(pattern, sentence, re.I):
            return sentence.strip().replace('"', "'")
    return text.splitlines()[0].strip().replace('"', "'")


def _organisation(sender: str) -> str:
    """Who a sender writes for: "Northwind" for billing@northwind.test; else the sender as named."""
    if (address := EMAIL.fullmatch(sender.strip())) is not None:
        return address.group(0).split("@", 1)[1].split(".", 1)[0].replace("-", " ").title()
    return sender.strip()


def _relay(sender: str, text: str) -> OfflineReply:
    """A third party's request, proposed as the action it asks for and justified by their own
    words, attributed to them: the validator decides (their words alone authorize nothing), and
    a blocked proposal waits for the user's review."""
    who = sender.strip() or "A third party"
    lowered = text.casefold()
    if PAY.search(lowered) and (invoice := INVOICE.search(text)) and (amount := AMOUNT.search(text)):
        value, currency = _money(amount)
        payee = re.search(r"\bto\s+([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)", text)
        return OfflineReply(tool_calls=[tool_call("pay_invoice", {
            "invoice_id": invoice.group(1), "payee": payee.group(1) if payee else _organisation(who) or "the invoice's issuer",
            "amount": value, "currency": currency,
            "justification": f'{who} wrote: "{_sentence(text, PAY.pattern)}"'})])
    if (wanted := SEND_ME.search(text)) and EMAIL.fullmatch(who):
        thing = wanted.group(1).strip()
        return OfflineReply(tool_calls=[tool_call("send_email", {
            "to": [who], "subject": (thing[:1].upper() + thing[1:])[:120],
            "body": f"Hello, here is {thing}, as you asked.",
            "justification": f'{who} asked: "{_sentence(text, SEND_ME.pattern)}"'})])
    return OfflineReply(text=f"{who} wrote; there is no request from the user to act on.")


def _follow_suggestion(user_text: str) -> OfflineReply:
    """The user sent a validator's suggestion back: do what it says, never the blocked action."""
    blocked = re.search(r"\((.*)\):", user_text)
    action = blocked.group(1) if blocked else "the blocked action"
    suggestion = user_text.split("):", 1)[-1].strip()
    lowered = suggestion.casefold()
    if "archive" in lowered and (match := MESSAGE_ID.search(action)):
        return OfflineReply(tool_calls=[tool_call("archive_email", {"message_id": match.group(1)})])
    if "ask the user" in lowered or "confirm" in lowered:
        return OfflineReply(tool_calls=[tool_call("send_sms_to_user", {
            "body": f"Before I go ahead: do you want me to {action[:1].lower() + action[1:]}? Reply yes to confirm."})])
    return OfflineReply(tool_calls=[tool_call("reply_to_user", {"body": f"Following the suggestion: {suggestion}"})])


def _act(user_text: str) -> OfflineReply:
    lowered = user_text.casefold()
    emails = EMAIL.findall(user_text)
    if "archive" in lowered and (match := MESSAGE_ID.search(user_text)):
        return OfflineReply(text="Archiving it.", tool_calls=[tool_call("archive_email", {"message_id": match.group(1)})])
    if re.search(r"\b(delete|trash)\b", lowered) and (match := MESSAGE_ID.search(user_text)):
        return OfflineReply(tool_calls=[tool_call("delete_email", {
            "message_id": match.group(1), "justification": _justify(user_text)})])
    if re.search(r"\bpay\b", lowered) and (invoice := INVOICE.search(user_text)) and (amount := AMOUNT.search(user_text)):
        value, currency = _money(amount)
        payee = re.search(r"\bto\s+([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)", user_text)
        return OfflineReply(tool_calls=[tool_call("pay_invoice", {
            "invoice_id": invoice.group(1), "payee": payee.group(1) if payee else "the invoice's issuer",
            "amount": value, "currency": currency, "justification": _justify(user_text)})])
    if (channel := CHANNEL.search(user_text)) and re.search(r"\b(post|tell|announce|slack)\b", lowered):
        return OfflineReply(tool_calls=[tool_call("post_slack_message", {
            "channel": channel.group(1), "text": _saying(user_text), "justification": _justify(user_text)})])
    if emails and re.search(r"\b(send|email|e-mail|mail|write)\b", lowered):
        subject = re.search(r"\babout\s+(.+?)(?:[,.;]|\bsaying\b|$)", user_text, re.I)
        body = _saying(user_text)
        return OfflineReply(tool_calls=[tool_call("send_email", {
            "to": [emails[0]], "subject": (subject.group(1).strip() if subject else _headline(body))[:120],
            "body": body, "justification": _justify(user_text)})])
    return OfflineReply(tool_calls=[tool_call("reply_to_user", {
        "body": "Noted. (Offline assistant: I act on requests that name an action, such as "
                "“send an email to name@example.com saying …” or “post in #channel …”.)"})])


def _after_tools(request) -> OfflineReply:
    last = request.messages[-1]["content"]
    results = [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
    previous = request.messages[-2]["content"] if len(request.messages) > 1 else []
    names = [b.get("name") for b in previous if isinstance(b, dict) and b.get("type") == "tool_use"]
    if names and all(n in ("reply_to_user", "send_sms_to_user") for n in names):
        return OfflineReply(text="Done." if not any(r.get("is_error") for r in results) else
                            "I could not reach the user; the failure is in the outbox.")
    texts = [str(r.get("content", "")) for r in results]
    blocked = [t for t in texts if t.startswith("BLOCKED")]
    if blocked:
        body = "I did not do it: " + blocked[0].removeprefix("BLOCKED by the validator").lstrip(" :")
        return OfflineReply(tool_calls=[tool_call("reply_to_user", {"body": body[:1200]})])
    failed = [t for t, r in zip(texts, results, strict=True) if r.get("is_error")]
    if failed:
        return OfflineReply(tool_calls=[tool_call("reply_to_user", {"body": "That did not work: " + failed[0][:1000]})])
    return OfflineReply(tool_calls=[tool_call("reply_to_user", {"body": "Done: " + " ".join(texts)[:1000]})])


@offline_policy("agent")
def agent(request) -> OfflineReply:
    last = request.messages[-1] if request.messages else {}
    if isinstance(last.get("content"), list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in last["content"]
    ):
        return _after_tools(request)
    actor, name, text = _latest_request(request.last_user_text())
    if actor == "system" and text.startswith(SUGGESTION_PREFIX):
        return _follow_suggestion(text)
    if actor == "external" and text:
        return _relay(name, text)
    if actor != "user" or not text:
        return OfflineReply(text="There is no request from the user to act on.")
    return _act(text)
