"""The offline drafter for `email.draft`: deterministic rules, honest about being rules.

Two request shapes:
- the product's own (drafting.prompts): a <context> document and <email> tags. The rule reads
  the LAST email: with no question or request in it, no reply is needed. Otherwise it writes a
  short reply in the style the context document states, and loops in a contact whose listed
  topics the email mentions. What it reads from the context document (any other text there is
  ignored):

      ## Contacts
      - Dana Lee <dana@acme.test>: Head of Legal (contracts, MSA, legal)
      ## Style
      - Greeting: Hey
      - Sign-off: Cheers
      - Name: Umar

  When the user's own earlier message in the thread (sender = the address the instructions name
  as the user's) named a weekday, the reply keeps to it ("As I wrote earlier in this thread:
  Friday."): the thread supports it, so it is no invented commitment. Nothing else of the
  earlier messages is read.

- a reference request (a fenced thread and "The user asks: ..."): the user's instruction
  addressed to the sender (nothing from inside the fence is copied, so instructions hidden in
  an email never reach the draft).

It copies nothing from an email body into the reply except the sender's first name, the subject
and weekdays the user wrote themself, so another sender's text cannot steer it. The router's eval
set of the route (router/evals/email.draft.jsonl) is built by the product's prompt
(drafting/evals.py), so it exercises the first shape."""

from __future__ import annotations

import html
import re

from router.offline import OfflineReply, offline_policy

from .prompts import NO_REPLY, ROUTE

# A reference request: a fenced thread and the user's instruction.
FENCE = re.compile(r"<<<DATA[^>]*>>>\n?(.*?)<<<END DATA>>>", re.S)
SENDER = re.compile(r"^From:\s*([A-Za-z][A-Za-z'-]*)", re.M)
ASK = re.compile(r"The user asks:\s*(.+)", re.S)

# The product's format.
CONTEXT = re.compile(r"<context>\n?(.*?)\n?</context>", re.S)
EMAILS = re.compile(r"<email([^>]*)>\n?(.*?)\n?</email>", re.S)
ATTR = re.compile(r'(\w+)="([^"]*)"')
STYLE = re.compile(r"^\s*[-*]?\s*(greeting|sign-off|signoff|name)\s*:\s*(.+?)\s*$", re.I | re.M)
CONTACT = re.compile(r"^\s*[-*]\s*(?P<name>[^<\n]+?)\s*<(?P<email>[^>\s]+@[^>\s]+)>\s*[:\u2014-]*\s*(?P<role>[^(\n]*)"
                     r"(?:\((?P<topics>[^)]*)\))?", re.M)
REQUEST = re.compile(r"\?|\b(please|could you|can you|would you|let me know|kindly|need you to|are you able)\b", re.I)
WORD = re.compile(r"[a-z0-9]+")
WEEKDAY = re.compile(r"\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b")
USER_ADDRESS = re.compile(r"<([\w.+'-]+@[\w-]+(?:\.[\w-]+)+)>")


def _first_name(sender: str) -> str:
    name = sender.split("<")[0].strip().strip('"') or sender.split("@")[0]
    first = re.split(r"[\s._]+", name)[0]
    return first[:1].upper() + first[1:] if first else ""


def style_of(context: str) -> dict[str, str]:
    style = {}
    for key, value in STYLE.findall(context):
        style[key.lower().replace("signoff", "sign-off")] = value.strip().rstrip(",")
    return style


def contacts_of(context: str) -> list[dict]:
    out = []
    for match in CONTACT.finditer(context):
        topics = [t.strip().lower() for t in (match.group("topics") or "").split(",") if t.strip()]
        out.append({"name": match.group("name").strip(), "email": match.group("email").strip(),
                    "role": match.group("role").strip().rstrip(":").strip(), "topics": topics})
    return out


def loop_ins(context: str, subject: str, body: str) -> list[dict]:
    """Contacts whose topics (whole words or phrases) the email's subject or body mention."""
    words = " " + " ".join(WORD.findall(f"{subject} {body}".lower())) + " "
    return [c for c in contacts_of(context)
            if any(f" {' '.join(WORD.findall(t))} " in words for t in c["topics"] if WORD.findall(t))]


def compose(*, context: str, sender: str, subject: str, body: str, user_name: str,
            said_days: list[str] | None = None) -> str:
    """The reply the rules write (the text after any Cc line). `said_days`: weekdays the user
    named in their own earlier messages of the thread."""
    style = style_of(context)
    first = _first_name(sender)
    greeting = style.get("greeting", "Hi")
    lines = [f"{greeting} {first}," if first else f"{greeting},", ""]
    lines.append(f"Thanks for your note about {subject or 'this'}. I'll look into it and get back to you shortly.")
    if said_days:
        lines.append(f"As I wrote earlier in this thread: {', '.join(said_days)}.")
    looped = loop_ins(context, subject, body)
    for contact in looped:
        role = f", our {contact['role']}," if contact["role"] else ""
        lines.append(f"I'm looping in {contact['name']}{role} who can help with this.")
    sign = style.get("sign-off", "Best")
    name = style.get("name", user_name)
    lines += ["", f"{sign},", name] if name else ["", f"{sign},"]
    text = "\n".join(lines)
    if looped:
        text = "Cc: " + ", ".join(c["email"] for c in looped) + "\n" + text
    return text


def _product(system: str, text: str) -> OfflineReply:
    context_match = CONTEXT.search(system)
    context = html.unescape(context_match.group(1)) if context_match else ""
    if context.strip() == "(empty)":
        context = ""
    emails = EMAILS.findall(text)
    attributes, body = emails[-1]
    attrs = {k: html.unescape(v) for k, v in ATTR.findall(attributes)}
    body = html.unescape(body)
    if not REQUEST.search(body):
        return OfflineReply(text=f"{NO_REPLY}: no question or request in the email (offline rule)")
    user = re.search(r"for (.+?) <", system)
    return OfflineReply(text=compose(context=context, sender=attrs.get("sender", ""), subject=attrs.get("subject", ""),
                                     body=body, user_name=user.group(1) if user else "",
                                     said_days=_days_the_user_said(system, emails[:-1])))


def _days_the_user_said(system: str, earlier: list[tuple[str, str]]) -> list[str]:
    """Weekdays in the user's own earlier messages: the user's address is the one the
    instructions name (before the context document, which names other people)."""
    instructions = system.split("<context>")[0]
    own = {address.casefold() for address in USER_ADDRESS.findall(instructions)}
    days: list[str] = []
    for attributes, body in earlier:
        sender = {k: html.unescape(v) for k, v in ATTR.findall(attributes)}.get("sender", "")
        if own and any(address in sender.casefold() for address in own):
            days += [day for day in WEEKDAY.findall(html.unescape(body)) if day not in days]
    return days


def _eval_case(text: str) -> OfflineReply:
    fenced = FENCE.search(text)
    outside = FENCE.sub("", text)
    ask = ASK.search(outside)
    instruction = (ask.group(1) if ask else outside).strip()
    match = SENDER.search(fenced.group(1)) if fenced else None
    name = match.group(1).capitalize() if match else ""
    if not instruction:
        return OfflineReply(text="")
    greeting = f"Hi {name}," if name else "Hi,"
    body = instruction[0].upper() + instruction[1:]
    return OfflineReply(text=f"{greeting}\n\n{body}\n\n(Offline draft: the user's instruction, not yet in their voice.)")


@offline_policy(ROUTE)
def draft(request) -> OfflineReply:
    text = request.last_user_text()
    if EMAILS.search(text):
        return _product(request.system_text(), text)
    return _eval_case(text)
