"""Offline rules for the `agent` route, so the demo assistant runs with no network.

A small, literal assistant: it acts on the user's latest message when that message names an
action it recognises (send an email to an address, post in a #channel, archive or delete a
message, pay an invoice), quoting the user's own words as justification; it tells the user
what happened after a tool ran or was blocked; otherwise it acknowledges. It never invents
recipients: it only uses addresses the user wrote.
"""

from __future__ import annotations

import html
import re

from router.offline import OfflineReply, offline_policy, tool_call
from validator.services import SUGGESTION_PREFIX

EVENT = re.compile(r'<event seq="(\d+)" actor="(\w+)"[^>]*>(.*?)</event>', re.S)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
CHANNEL = re.compile(r"(#[\w-]+)")
MESSAGE_ID = re.compile(r"\b(?:message|email|thread)\s+(?:id\s+)?([A-Za-z0-9_-]*\d[A-Za-z0-9_-]*)", re.I)
INVOICE = re.compile(r"\binvoice\s+([A-Z0-9][A-Z0-9-]+)", re.I)
AMOUNT = re.compile(r"([$€£])\s?([\d,]+(?:\.\d+)?)|([\d,]+(?:\.\d+)?)\s?(USD|EUR|GBP)", re.I)
CURRENCY = {"$": "USD", "€": "EUR", "£": "GBP"}


def _latest_instruction(text: str) -> tuple[str, str]:
    """(actor, text) of the latest event from the user or from Lindy itself (a followed
    suggestion is a system note); ("", "") when there is none."""
    events = [(actor, html.unescape(body).strip()) for _, actor, body in EVENT.findall(text)
              if actor in ("user", "system")]
    return events[-1] if events else ("", "")


def _saying(text: str) -> str:
    match = re.search(r"\b(?:saying|that says|to say|telling (?:them|him|her))\b[:,]?\s*(.+)", text, re.I | re.S)
    return (match.group(1) if match else text).strip().strip('"“”')


def _justify(user_text: str) -> str:
    first_line = user_text.splitlines()[0].strip().replace('"', "'")
    return f'The user asked me directly: "{first_line}"'


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
        value = float((amount.group(2) or amount.group(3)).replace(",", ""))
        currency = CURRENCY.get(amount.group(1) or "", (amount.group(4) or "USD").upper())
        payee = re.search(r"\bto\s+([A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)", user_text)
        return OfflineReply(tool_calls=[tool_call("pay_invoice", {
            "invoice_id": invoice.group(1), "payee": payee.group(1) if payee else "the invoice's issuer",
            "amount": value, "currency": currency, "justification": _justify(user_text)})])
    if (channel := CHANNEL.search(user_text)) and re.search(r"\b(post|tell|announce|slack)\b", lowered):
        return OfflineReply(tool_calls=[tool_call("post_slack_message", {
            "channel": channel.group(1), "text": _saying(user_text), "justification": _justify(user_text)})])
    if emails and re.search(r"\b(send|email|e-mail|mail|write)\b", lowered):
        subject = re.search(r"\babout\s+(.+?)(?:[,.;]|\bsaying\b|$)", user_text, re.I)
        return OfflineReply(tool_calls=[tool_call("send_email", {
            "to": [emails[0]], "subject": (subject.group(1).strip() if subject else "A note from your contact")[:120],
            "body": _saying(user_text), "justification": _justify(user_text)})])
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
    actor, text = _latest_instruction(request.last_user_text())
    if actor == "system" and text.startswith(SUGGESTION_PREFIX):
        return _follow_suggestion(text)
    if actor != "user" or not text:
        return OfflineReply(text="There is no request from the user to act on.")
    return _act(text)
