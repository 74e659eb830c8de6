"""The offline rules for the learner's routes: deterministic, they really read the request, and
they are honest about what they are (no model reads meaning here).

learner.judge — which draft is closer to the sent email: the word-level similarity of each
  candidate to the sent email (difflib's ratio over lower-cased word tokens, so it is a different
  measure from the pairs' own similarity and the audit's agreement figure means something); the
  higher one wins, and a difference under 0.005 is a tie. It reads nothing of the positions, so
  it has no position bias by construction: the audit measures exactly that.

learner.propose — infers ONE edit per call from the draft/sent pairs, the best supported of:
  - a person the user looped in ("Name (email@x), our Role") who is not in the document: added,
    or replacing the contact that had the same role (a new head of legal);
  - a contact the draft looped in and the sent email left out: removed (they left) — plausible,
    and wrong when the user only skipped the loop-in that once;
  - a sign-off or greeting the sent email used instead of the draft's;
  - a person looped in with no role the rules can read ("your colleague"): added as a contact for
    the email's subject words — a plausible inference that is usually wrong.
  Support = how many pairs show it; ties go in that order. It cites the pairs it used.

learner.init — composes a document from answered threads: the most common greeting and
  sign-off, the signature name, and the people looped in with their roles and the subject words of
  the threads they were looped into.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

from router.offline import OfflineReply, offline_policy, tool_call

from . import prompts

WORD = re.compile(r"[a-z0-9@.]+")
GREETING = re.compile(r"^\s*([A-Z][A-Za-z]*)\s+[A-Z][\w'-]*,\s*$")
SIGN_OFF = re.compile(r"^\s*([A-Z][A-Za-z ]{0,30}?)[,!]?\s*$")
PERSON = re.compile(r"(?P<name>[A-Z][a-z'-]+ [A-Z][a-z'-]+)\s*[(<](?P<email>[\w.+'-]+@[\w-]+(?:\.[\w-]+)+)[)>]"
                    r"(?:,?\s*(?:who is\s+)?(?P<whose>our|my|the)\s+(?:new\s+)?(?P<role>[A-Za-z][A-Za-z ]{2,40}?))?"
                    r"(?=[,.;:!?\n]|\s+(?:who|and|will|to|is|has)\b|$)")
CONTACT_LINE = re.compile(r"^\s*[-*]\s*(?P<name>[^<\n]+?)\s*<(?P<email>[^>\s]+@[^>\s]+)>\s*[:\u2014-]*\s*"
                          r"(?P<role>[^(\n]*)(?:\((?P<topics>[^)]*)\))?\s*$", re.M)
STOP = set("a an and the of for to in on re fw fwd your our my with about from at by is are be this that "
           "please can could you we i it me next week quick question update follow up".split())


def _words(text: str) -> list[str]:
    return WORD.findall((text or "").lower())


def word_similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, _words(a), _words(b), autojunk=False).ratio()


# --- judge ----------------------------------------------------------------------------------

@offline_policy(prompts.JUDGE_ROUTE)
def judge(request) -> OfflineReply:
    payload = prompts.fenced_payload(request.last_user_text()) or {}
    sent = payload.get("sent_email", "")
    a = word_similarity(payload.get("draft_a", ""), sent)
    b = word_similarity(payload.get("draft_b", ""), sent)
    closer = "tie" if abs(a - b) < 0.005 else ("A" if a > b else "B")
    reason = f"offline rule: word similarity to the sent email A {a:.3f}, B {b:.3f}"
    return OfflineReply(tool_calls=[tool_call(prompts.JUDGE_TOOL, {"closer": closer, "reason": reason})])


# --- reading emails -------------------------------------------------------------------------

def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in (text or "").strip().splitlines() if line.strip()]


def greeting_of(text: str) -> str:
    lines = _lines(text)
    match = GREETING.match(lines[0]) if lines else None
    return match.group(1) if match else ""


def sign_off_of(text: str) -> tuple[str, str]:
    """(sign-off, name) from the last two lines: "Cheers," then "Umar"."""
    lines = _lines(text)
    if len(lines) < 2 or not lines[-2].rstrip().endswith((",", "!")):
        return "", ""
    match = SIGN_OFF.match(lines[-2])
    name = lines[-1].strip()
    if not match or len(name.split()) > 3:
        return "", ""
    return match.group(1).strip(), name


def people_of(text: str) -> list[dict]:
    out = []
    for match in PERSON.finditer(text or ""):
        role = (match.group("role") or "").strip()
        out.append({"name": match.group("name"), "email": match.group("email").lower(),
                    "role": role if match.group("whose") in ("our", "my") else ""})
    return out


def contacts_of(context: str) -> list[dict]:
    return [{"name": m.group("name").strip(), "email": m.group("email").strip().lower(),
             "role": m.group("role").strip().rstrip(":").strip(),
             "topics": [t.strip() for t in (m.group("topics") or "").split(",") if t.strip()],
             "line": m.group(0)} for m in CONTACT_LINE.finditer(context or "")]


def subject_topics(subject: str, limit: int = 3) -> list[str]:
    words = [w for w in re.findall(r"[a-z]+", (subject or "").lower()) if w not in STOP and len(w) > 2]
    return list(dict.fromkeys(words))[:limit]


def contact_line(name: str, email: str, role: str, topics: list[str]) -> str:
    topic_text = f" ({', '.join(topics)})" if topics else ""
    return f"- {name} <{email}>: {role or 'Contact'}{topic_text}"


# --- editing the document -------------------------------------------------------------------

SECTIONS = ("## Work context", "## Contacts", "## Style")


def _ensure_sections(context: str) -> str:
    text = (context or "").rstrip()
    for heading in SECTIONS:
        if heading not in text:
            text = (text + "\n\n" if text else "") + heading
    return text + "\n"


def _add_to_section(context: str, heading: str, line: str) -> str:
    text = _ensure_sections(context)
    lines = text.splitlines()
    start = lines.index(heading)
    end = start + 1
    while end < len(lines) and not lines[end].startswith("## "):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    lines.insert(end, line)
    return "\n".join(lines).rstrip() + "\n"


def _set_style(context: str, key: str, value: str) -> str:
    pattern = re.compile(rf"^\s*[-*]\s*{re.escape(key)}\s*:.*$", re.I | re.M)
    if pattern.search(context or ""):
        return pattern.sub(f"- {key}: {value}", context, count=1)
    return _add_to_section(context, "## Style", f"- {key}: {value}")


def _style_value(context: str, key: str) -> str:
    match = re.search(rf"^\s*[-*]\s*{re.escape(key)}\s*:\s*(.+?)\s*$", context or "", re.I | re.M)
    return match.group(1).rstrip(",") if match else ""


# --- propose --------------------------------------------------------------------------------

def _candidates(context: str, pairs: list[dict]) -> list[tuple[int, int, str, str, list[int]]]:
    """(support, order, summary, new document, pair indexes) for each inference."""
    contacts = contacts_of(context)
    known = {c["email"] for c in contacts}
    found: dict[tuple, dict] = {}

    def note(key: tuple, order: int, index: int, build) -> None:
        entry = found.setdefault(key, {"order": order, "pairs": [], "build": build})
        if index not in entry["pairs"]:
            entry["pairs"].append(index)

    # The subjects each person was looped in on, over all the pairs: their topics.
    topics_of: dict[str, list[str]] = {}
    for pair in pairs:
        for person in people_of(pair.get("sent", "")):
            known_topics = topics_of.setdefault(person["email"], [])
            known_topics += [t for t in subject_topics(pair.get("subject", "")) if t not in known_topics]
    for index, pair in enumerate(pairs):
        draft, sent = pair.get("draft", ""), pair.get("sent", "")
        sent_people = people_of(sent)
        sent_emails = {p["email"] for p in sent_people}
        sent_lower = sent.lower()
        for person in sent_people:
            if person["email"] in known:
                continue
            same_role = [c for c in contacts if person["role"] and c["role"].lower() == person["role"].lower()]
            if same_role:
                old = same_role[0]
                line = contact_line(person["name"], person["email"], old["role"], old["topics"])
                note(("replace", old["email"], person["email"]), 0, index,
                     lambda ctx, old=old, line=line: (ctx.replace(old["line"], line),
                                                       f"{line[2:]} replaces {old['name']} as {old['role']}"))
            elif person["role"]:
                topics = topics_of[person["email"]][:6]
                line = contact_line(person["name"], person["email"], person["role"][:1].upper() + person["role"][1:],
                                    topics)
                note(("add", person["email"]), 1, index,
                     lambda ctx, line=line: (_add_to_section(ctx, "## Contacts", line), f"New contact: {line[2:]}"))
            else:
                topics = topics_of[person["email"]][:6]
                line = contact_line(person["name"], person["email"], "Contact", topics)
                note(("guess", person["email"]), 5, index,
                     lambda ctx, line=line: (_add_to_section(ctx, "## Contacts", line),
                                             f"Loops in {line[2:]} (role guessed from the subject)"))
        for contact in contacts:
            in_draft = contact["name"] in draft or contact["email"] in draft.lower()
            if in_draft and contact["email"] not in sent_emails and contact["name"].lower() not in sent_lower:
                replaced = any(p["role"] and p["role"].lower() == contact["role"].lower() for p in sent_people)
                if not replaced:
                    note(("remove", contact["email"]), 4, index,
                         lambda ctx, contact=contact: (ctx.replace(contact["line"] + "\n", "").replace(contact["line"], ""),
                                                       f"{contact['name']} ({contact['role']}) seems to have left: "
                                                       "the user no longer loops them in"))
        sent_sign, sent_name = sign_off_of(sent)
        draft_sign, _ = sign_off_of(draft)
        if sent_sign and sent_sign != draft_sign:
            note(("sign-off", sent_sign, sent_name), 2, index,
                 lambda ctx, s=sent_sign, n=sent_name: (_set_style(_set_style(ctx, "Sign-off", s), "Name", n)
                                                        if n and n != _style_value(ctx, "Name")
                                                        else _set_style(ctx, "Sign-off", s), f"Signs off with {s!r}"))
        sent_greet, draft_greet = greeting_of(sent), greeting_of(draft)
        if sent_greet and sent_greet != draft_greet:
            note(("greeting", sent_greet), 3, index,
                 lambda ctx, g=sent_greet: (_set_style(ctx, "Greeting", g), f"Opens with {g!r}"))
    out = []
    for entry in found.values():
        new, summary = entry["build"](context or "")
        if new.strip() != (context or "").strip():
            out.append((len(entry["pairs"]), entry["order"], summary, new, entry["pairs"]))
    out.sort(key=lambda c: (-c[0], c[1], c[2]))
    return out


@offline_policy(prompts.PROPOSE_ROUTE)
def propose(request) -> OfflineReply:
    payload = prompts.fenced_payload(request.last_user_text()) or {}
    context = payload.get("current_context", "")
    pairs = [p for p in payload.get("pairs") or [] if isinstance(p, dict)]
    candidates = _candidates(context, pairs)
    if request.prompt_variant == "cautious":
        candidates = [c for c in candidates if c[0] >= 2]
    if not candidates:
        return OfflineReply(tool_calls=[tool_call(prompts.PROPOSE_TOOL, {
            "context": context, "summary": "no change (offline rules found nothing to infer)", "evidence": []})])
    support, _, summary, new, used = candidates[0]
    return OfflineReply(tool_calls=[tool_call(prompts.PROPOSE_TOOL, {
        "context": new, "summary": f"{summary} (offline rule, {support} pair(s))", "evidence": [i + 1 for i in used]})])


# --- init -----------------------------------------------------------------------------------

@offline_policy(prompts.INIT_ROUTE)
def init(request) -> OfflineReply:
    payload = prompts.fenced_payload(request.last_user_text()) or {}
    threads = [t for t in payload.get("threads") or [] if isinstance(t, dict)]
    greetings = Counter(g for t in threads if (g := greeting_of(t.get("sent", ""))))
    sign_offs = Counter(s for t in threads if (s := sign_off_of(t.get("sent", "")))[0])
    people: dict[str, dict] = {}
    for thread in threads:
        for person in people_of(thread.get("sent", "")):
            entry = people.setdefault(person["email"], {**person, "topics": Counter()})
            entry["role"] = entry["role"] or person["role"]
            entry["topics"].update(subject_topics(thread.get("subject", "")))
    text = "## Work context\n- Inferred by the offline rules from answered email threads.\n\n## Contacts\n"
    for person in people.values():
        if not person["role"]:
            continue
        role = person["role"][:1].upper() + person["role"][1:]
        text += contact_line(person["name"], person["email"], role, [t for t, _ in person["topics"].most_common(3)]) + "\n"
    text += "\n## Style\n"
    if greetings:
        text += f"- Greeting: {greetings.most_common(1)[0][0]}\n"
    if sign_offs:
        (sign, name), _ = sign_offs.most_common(1)[0]
        text += f"- Sign-off: {sign}\n" + (f"- Name: {name}\n" if name else "")
    summary = f"offline rules: {len(threads)} thread(s), {sum(1 for p in people.values() if p['role'])} contact(s)"
    return OfflineReply(tool_calls=[tool_call(prompts.INIT_TOOL, {"context": text, "summary": summary})])
