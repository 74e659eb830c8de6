"""Offline policies for `memory.summarize` and `memory.agent`: deterministic rules so the
product hydrates with no network. Honest about what they are: keyword rules, not a model.

Summarizer: every sentence of every item becomes a fact; sentences with procedural cues
("always", "never", "every Friday", "before", "make sure"...) are procedural, past-tense
events episodic, the rest semantic. A sentence from someone other than the memory's owner
keeps its attribution: "Jane Park (external) asked: Please always pay our invoices."

Memory agent: procedural facts go to procedures.md, episodic ones to journal.md, semantic
ones to master.md; each fact naming a person ("Jane Park") or a company ("Initech is...",
"from Northwind") also goes to people/<name>.md or companies/<name>.md. New files get their
index line in the same revision. On a verifier rejection it links unlinked files and cuts
the oldest lines of files over budget.
"""

from __future__ import annotations

import html
import re
import unicodedata

from memory.paths import INDEX, MASTER
from router.offline import OfflineReply, estimate_tokens, offline_policy, tool_call
from router.types import CompletionRequest, content_text

from . import prompts
from .agent import EMPTY_FILE

_ITEM = re.compile(r'<item id="(\d+)"([^>]*)>\n(.*?)\n</item>', re.DOTALL)
_ATTRIBUTE_TO = re.compile(r' attribute_to="([^"]*)"')
# A sentence that asks for something: "Jane Park (external) asked: …" rather than "said: …".
_REQUEST = re.compile(r"\b(please|can you|could you|would you|kindly|make sure|remember to|always|never|must|"
                      r"need you to|we need)\b", re.IGNORECASE)
_FACT = re.compile(r'<fact kind="(\w+)" items="([\d,]*)">(.*?)</fact>', re.DOTALL)
_VIOLATION = re.compile(r'<violation path="([^"]+)" kind="(\w+)">')
_LISTING = re.compile(r"^- (\S+\.md) \(\d+ tokens\)$", re.MULTILINE)
_BUDGET = re.compile(r"within (\d+) tokens;")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])|\n+")
_HEADER = re.compile(r"^(?:Meeting|Task|Subject|Email from)\b")
_PREFIX = re.compile(r"^(?:#[\w-]+:|User:|Assistant:|Tool [\w-]*:|External(?: \([^)]*\))?:|Subject:|Meeting:|Task:)\s*")

PROCEDURAL = re.compile(
    r"\b(always|never|every (?:day|week|month|morning|evening|monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday)|before|make sure|must|should|don'?t|do not|remember to|wants? (?:them|it|you|us|to)|prefers?|policy|"
    r"rule|reviews every)\b",
    re.IGNORECASE,
)
EPISODIC = re.compile(
    r"\b(shipped|launched|joined|signed|closed|sent|drafted|found|noted|decided|agreed|arrived|happened|"
    r"shortlisted|moved|hired|released|yesterday|today|last week|on (?:monday|tuesday|wednesday|thursday|friday))\b",
    re.IGNORECASE,
)
_PERSON = re.compile(r"\b([A-Z][a-zà-ÿ]+ [A-Z][a-zà-ÿ]+)\b")
_COMPANY = re.compile(r"(?:\b(?:from|with|at|to|for|by)\s+([A-Z][a-zA-Z]{2,})\b|\b([A-Z][a-zA-Z]{2,})(?=\s+(?:is|was|"
                      r"Corp|Inc|Ltd|LLC)\b))")
_PERSON_CUE = re.compile(r"\b(CTO|CEO|CFO|COO|VP|head|joined|leads?|manager|engineer|founder|wants|asked|their|his|"
                         r"her|he|she|our new|hired)\b", re.I)
_COMPANY_CUE = re.compile(r"\b(customer|client|vendor|supplier|partner|company|invoice|renewal|contract|MSA)\b", re.I)
STOP = {
    "The", "This", "That", "These", "Our", "Their", "They", "We", "You", "Your", "Every", "Always", "Never", "Before",
    "After", "Please", "Hi", "Hello", "Thanks", "Task", "User", "Assistant", "Meeting", "External", "Tool", "Email",
    "Subject", "From", "Noted", "Found", "Drafted", "Shipped", "Two", "Three", "Lindy", "Head", "Weekly", "Monday",
    "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February", "March", "April",
    "May", "June", "July", "August", "September", "October", "November", "December", "Legal", "Find", "Reply",
    "Draft", "Send", "Collect", "Plan", "Vendor", "Revenue", "Sarah", "Priya", "Jane", "Umar",
}


def classify(sentence: str) -> str:
    if PROCEDURAL.search(sentence):
        return "procedural"
    if EPISODIC.search(sentence):
        return "episodic"
    return "semantic"


def _sentences(text: str) -> list[str]:
    found = []
    lines = [line for line in text.splitlines() if not _HEADER.match(line.strip())]
    for raw in _SENTENCE.split("\n".join(lines)):
        sentence = _PREFIX.sub("", raw.strip()).strip()
        # Questions and fragments are not facts.
        if len(sentence.split()) >= 4 and not sentence.endswith("?"):
            found.append(sentence)
    return found


def attributed(who: str, sentence: str) -> str:
    """'Jane Park (external) asked: Please always pay our invoices immediately.'"""
    return f"{who} {'asked' if _REQUEST.search(sentence) else 'said'}: {sentence}"


def _record(facts: list[dict]) -> OfflineReply:
    return OfflineReply(tool_calls=[tool_call(prompts.RECORD_FACTS, {"facts": facts})])


@offline_policy("memory.summarize")
def summarize(request: CompletionRequest) -> OfflineReply:
    text = request.last_user_text()
    facts: dict[str, dict] = {}
    if prompts.MERGE_MARKER in text:
        for kind, ids, body in _FACT.findall(text):
            body = html.unescape(body)
            entry = facts.setdefault(body.lower(), {"kind": kind, "text": body, "item_ids": []})
            entry["item_ids"] += [int(i) for i in ids.split(",") if i and int(i) not in entry["item_ids"]]
        return _record(list(facts.values()))
    for item_id, attributes, body in _ITEM.findall(text):
        said_by = _ATTRIBUTE_TO.search(attributes)
        for sentence in _sentences(html.unescape(body)):
            if said_by:  # someone else's words stay theirs: never a plain rule of the memory
                sentence = attributed(html.unescape(said_by.group(1)), sentence)
            entry = facts.setdefault(sentence.lower(), {"kind": classify(sentence), "text": sentence, "item_ids": []})
            if int(item_id) not in entry["item_ids"]:
                entry["item_ids"].append(int(item_id))
    ordered = sorted(facts.values(), key=lambda f: f["kind"] != "procedural")
    return _record(ordered)


# --- memory agent ------------------------------------------------------------------------------

def slug(name: str) -> str:
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-") or "note"


def people_in(text: str) -> list[str]:
    if not _PERSON_CUE.search(text):
        return []
    names = []
    for name in _PERSON.findall(text):
        first, last = name.split(" ", 1)
        if first in STOP - {"Sarah", "Priya", "Jane", "Umar"} or last in STOP:
            continue
        if name not in names:
            names.append(name)
    return names


def companies_in(text: str, people: list[str]) -> list[str]:
    if not _COMPANY_CUE.search(text):
        return []
    parts = {part for name in people for part in name.split()}
    found = []
    for before, after in _COMPANY.findall(text):
        word = before or after
        if word and word not in STOP and word not in parts and not word.isupper() and word not in found:
            found.append(word)
    return found


TITLES = {
    "procedures.md": ("# Procedures\n\nRules and ways of doing things.\n", "Rules and ways of doing things (procedural memory)"),
    "journal.md": ("# Journal\n\nWhat happened, oldest first.\n", "What happened (episodic memory)"),
}
MASTER_HEADER = "# Master memory\n\nThe canonical facts about who we are and how we work.\n"


def plan(facts: list[dict]) -> dict[str, list[dict]]:
    """path -> the facts that belong in it."""
    targets: dict[str, list[dict]] = {}
    for fact in facts:
        kind_file = {"procedural": "procedures.md", "episodic": "journal.md"}.get(fact["kind"], MASTER)
        targets.setdefault(kind_file, []).append(fact)
        people = people_in(fact["text"])
        for person in people:
            targets.setdefault(f"people/{slug(person)}.md", []).append(fact)
        for company in companies_in(fact["text"], people):
            targets.setdefault(f"companies/{slug(company)}.md", []).append(fact)
    return targets


def _title_of(path: str, facts: list[dict]) -> tuple[str, str]:
    if path in TITLES:
        return TITLES[path]
    folder, name = path.split("/", 1)
    name = name[:-3]
    label = None
    for fact in facts:
        pool = people_in(fact["text"]) if folder == "people" else companies_in(fact["text"], people_in(fact["text"]))
        for candidate in pool:
            if slug(candidate) == name:
                label = candidate
    label = label or name.replace("-", " ").title()
    what = "who they are and what we know" if folder == "people" else "the company and our dealings with it"
    return f"# {label}\n", f"{label}: {what}"


def _append(content: str, facts: list[dict]) -> str:
    lines = content.rstrip("\n")
    for fact in facts:
        bullet = f"- {fact['text']}"
        if bullet not in lines.splitlines():
            lines += f"\n{bullet}"
    return lines + "\n"


def _tool_history(messages: list[dict]) -> tuple[dict[str, str], list[tuple[str, dict]], list[str]]:
    """What earlier turns read (path -> content), wrote ((name, input)), and the ids of calls."""
    calls: dict[str, tuple[str, dict]] = {}
    reads: dict[str, str] = {}
    writes: list[tuple[str, dict]] = []
    for message in messages:
        blocks = message.get("content")
        if not isinstance(blocks, list):
            continue
        for block in blocks:
            if block.get("type") == "tool_use":
                calls[block["id"]] = (block["name"], block.get("input") or {})
                if block["name"] != "read_file":
                    writes.append((block["name"], block.get("input") or {}))
            elif block.get("type") == "tool_result" and not block.get("is_error"):
                name, args = calls.get(block.get("tool_use_id"), ("", {}))
                if name == "read_file":
                    text = content_text(block.get("content"))
                    reads[args.get("path", "")] = "" if text == EMPTY_FILE else text
    return reads, writes, list(calls)


def _current(path: str, reads: dict[str, str], writes: list[tuple[str, dict]]) -> str | None:
    """The draft content of `path` as this conversation left it (None: unknown or absent)."""
    content = reads.get(path)
    for name, args in writes:
        if args.get("path") == path and name in ("create_file", "update_file"):
            content = args.get("content")
    return content


@offline_policy("memory.agent")
def memory_agent(request: CompletionRequest) -> OfflineReply:
    messages = request.messages
    first = content_text(messages[0].get("content")) if messages else ""
    facts = [{"kind": k, "text": html.unescape(t), "item_ids": [int(i) for i in ids.split(",") if i]}
             for k, ids, t in _FACT.findall(first)]
    existing = set(_LISTING.findall(first.split("New facts", 1)[0]))
    reads, writes, calls = _tool_history(messages)
    targets = plan(facts)
    last = messages[-1] if messages else {}
    last_text = content_text(last.get("content")) if last.get("role") == "user" else ""

    if not calls:
        wanted = sorted({INDEX} | {p for p in targets if p in existing})
        return OfflineReply(text="Reading the files these facts touch.",
                            tool_calls=[tool_call("read_file", {"path": p}) for p in wanted])

    if prompts.VERIFIER_MARKER in last_text:
        return _fix(request, last_text, reads, writes, {f"- {f['text']}" for f in facts})

    if not writes:
        return _write(targets, reads, existing)

    changed = sorted({args.get("path", "") for _, args in writes})
    return OfflineReply(text=f"Updated {', '.join(changed)}." if changed else "Nothing new to write.")


def _write(targets: dict[str, list[dict]], reads: dict[str, str], existing: set[str]) -> OfflineReply:
    tool_calls = []
    index = reads.get(INDEX, "")
    new_index = index
    for path in sorted(targets):
        facts = targets[path]
        sources = sorted({i for f in facts for i in f["item_ids"]})
        if path in existing:
            before = reads.get(path, "")
            after = _append(before, facts)
            if after != before:
                tool_calls.append(tool_call("update_file", {"path": path, "content": after, "sources": sources}))
            continue
        if path == MASTER:
            tool_calls.append(tool_call("create_file", {"path": path, "content": _append(MASTER_HEADER, facts),
                                                        "sources": sources}))
            continue
        header, description = _title_of(path, facts)
        tool_calls.append(tool_call("create_file", {"path": path, "content": _append(header, facts), "sources": sources}))
        if f"]({path})" not in new_index:
            new_index = new_index.rstrip("\n") + ("\n" if new_index.strip() else "") + f"- [{path}]({path}) — {description}\n"
    if new_index != index:
        tool_calls.append(tool_call("update_file", {"path": INDEX, "content": new_index.lstrip("\n")}))
    if not tool_calls:
        return OfflineReply(text="Memory already holds every one of these facts.")
    return OfflineReply(text="Writing the facts into their files.", tool_calls=tool_calls)


def _fix(request, feedback: str, reads, writes, new_lines: set[str]) -> OfflineReply:
    """Link what is unlinked; bring a file over budget back within it by cutting its oldest lines,
    but never the lines of this run's facts (cutting those would lose them): when the new facts
    alone do not fit, leave the file for a person (the run then needs attention)."""
    budget_match = _BUDGET.search(request.system_text())
    budget = int(budget_match.group(1)) if budget_match else 8000
    calls = []
    index = _current(INDEX, reads, writes) or ""
    new_index = index
    for path, kind in _VIOLATION.findall(feedback):
        path = html.unescape(path)
        if kind == "unlinked" and f"]({path})" not in new_index:
            new_index = new_index.rstrip("\n") + f"\n- [{path}]({path})\n"
        elif kind == "over_budget":
            content = _current(path, reads, writes)
            if content is None:
                calls.append(tool_call("read_file", {"path": path}))
                continue
            lines = content.splitlines()
            head, body = lines[:1], lines[1:]
            while estimate_tokens("\n".join(head + body) + "\n") > budget:
                old = next((n for n, line in enumerate(body) if line not in new_lines), None)
                if old is None:
                    break
                body.pop(old)  # the oldest line that is not a new fact goes first
            if estimate_tokens("\n".join(head + body) + "\n") <= budget:
                calls.append(tool_call("update_file", {"path": path, "content": "\n".join(head + body) + "\n"}))
    if new_index != index:
        calls.append(tool_call("update_file", {"path": INDEX, "content": new_index.lstrip("\n")}))
    if not calls:
        return OfflineReply(text="I cannot fix these violations with my rules; a person needs to look.")
    return OfflineReply(text="Fixing what the verifier found.", tool_calls=calls)
