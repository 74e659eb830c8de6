"""Checked evidence: every quote in a justification, looked up in the task history and the
user's memories, with who wrote it and whether it means what the justification says.

A justification is a claim. "The user said X" is only worth something if X is, word for word,
inside one thing the user wrote (an event they wrote, or a memory line in their own words), as
a whole clause and not under a negation ("Never pay …"). The actor kind is the one recorded on
the event: a name, or text that says "User: yes", never changes it. The result goes to the
validator model (as a table it is told how to read) and to the reviewer.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from . import clauses, negation

# Straight double quotes, curly double quotes, and guillemets. Single quotes are left out:
# they are apostrophes far more often than quotation marks.
_QUOTE_PATTERNS = [
    re.compile(r'"([^"\n]{3,}?)"'),
    re.compile(r"“([^”\n]{3,}?)”"),
    re.compile(r"«\s?([^»\n]{3,}?)\s?»"),
]
MAX_QUOTES = 20


def extract_quotes(justification: str) -> list[str]:
    found: list[tuple[int, str]] = []
    for pattern in _QUOTE_PATTERNS:
        for match in pattern.finditer(justification or ""):
            quote = match.group(1).strip().rstrip(".,;:").strip()
            if len(quote) >= 3:
                found.append((match.start(), quote))
    seen, quotes = set(), []
    for _, quote in sorted(found):
        key = clauses.normalise(quote)
        if key not in seen:
            seen.add(key)
            quotes.append(quote)
    return quotes[:MAX_QUOTES]


ACTOR_WORDS = {
    "user": "the user",
    "assistant": "the assistant",
    "tool": "a tool result",
    "external": "an external party",
    "system": "Lindy itself (a system note, not the user)",
}


@dataclass
class Source:
    """One place a quote was found, and whether there it is the user's words."""

    where: str  # "task" or "memory"
    actor: str  # the event's recorded actor kind (user | assistant | tool | external | system), or "memory"
    name: str = ""  # an external party's recorded name (a label only: it never changes `actor`); the memory's label
    seq: int | None = None  # the event's number in the task
    event_id: int | None = None  # the TaskEvent's id, when the history came from a task
    path: str = ""  # the memory file
    author_kind: str = ""  # memory only: "user", "others", "team", or "unknown" when no line provenance
    author_label: str = ""  # memory only: who wrote the line
    whole_clause: bool = False
    negated: bool = False
    negation_cue: str = ""

    @property
    def counts(self) -> bool:
        """Found, a whole clause, not negated, and written by the user: only then the user's words."""
        if not self.whole_clause or self.negated:
            return False
        if self.where == "memory":
            return self.name.startswith("user:") and self.author_kind == "user"
        return self.actor == "user"

    def describe(self) -> str:
        if self.where == "memory":
            owner = "the user's memory" if self.name.startswith("user:") else "the team's memory"
            author = {"user": "written by the user", "others": "derived from other people's words",
                      "team": "written by the team", "unknown": "author unknown"}.get(self.author_kind, self.author_kind)
            who = f"{owner} ({self.name} {self.path}), line {author}"
            if self.author_label:
                who += f" ({self.author_label})"
        else:
            who = ACTOR_WORDS.get(self.actor, self.actor)
            if self.name:
                who += f" named “{self.name}”"
            if self.seq is not None:
                who = f"event #{self.seq} by {who}"
        clause = "whole clause" if self.whole_clause else "only a fragment of a clause"
        negation = f"negated by “{self.negation_cue}”" if self.negated else "not negated"
        return f"{who}; {clause}; {negation}"


@dataclass
class QuoteCheck:
    quote: str
    found: bool
    sources: list[Source] = field(default_factory=list)

    @property
    def by_user(self) -> bool:
        return any(s.counts for s in self.sources)

    @property
    def whole_clause(self) -> bool:
        return any(s.whole_clause for s in self.sources)

    @property
    def negated(self) -> bool:
        return any(s.negated for s in self.sources)

    def describe(self) -> str:
        if not self.found:
            return (f"“{self.quote}”: NOT FOUND as whole words inside any single event or memory line. "
                    "It is not the user's words.")
        verdict = "COUNTS as the user's words" if self.by_user else "does NOT count as the user's words"
        return f"“{self.quote}”: {verdict}. Found in: " + " | ".join(s.describe() for s in self.sources)

    def to_dict(self) -> dict:
        return {
            "quote": self.quote, "found": self.found, "whole_clause": self.whole_clause, "negated": self.negated,
            "by_user": self.by_user,
            "sources": [{**asdict(s), "counts": s.counts} for s in self.sources],
        }


@dataclass
class EvidenceCheck:
    quotes: list[QuoteCheck]

    @property
    def summary(self) -> str:
        if not self.quotes:
            return "The justification quotes nothing."
        return "\n".join(check.describe() for check in self.quotes)

    def to_dict(self) -> dict:
        return {
            "quotes": [check.to_dict() for check in self.quotes],
            "all_found": all(c.found for c in self.quotes) if self.quotes else False,
            "any_by_user": any(c.by_user for c in self.quotes),
            "summary": self.summary,
        }


def _placement(needle: str, text: str, tool: str) -> list[tuple[bool, negation.Negation | None]]:
    """For each word-bounded occurrence of `needle` in `text` (normalised): whole clause? negated?
    `needle` is unwrapped already (clauses.unwrap_values, once per quote)."""
    found = []
    # An address in quotes or brackets, a channel with or without its #: the same words.
    text = clauses.unwrap_values(text)
    for start, end in clauses.word_spans(needle, text):
        segment = clauses.segment_of(text, start, end)
        found.append((clauses.is_whole_clause(text, start, end),
                      negation.find(text[segment.start:start], text[start:end], text[end:segment.end], tool=tool)))
    return found


def _best(placements):
    """The most favourable occurrence: a whole, un-negated clause if there is one."""
    return sorted(placements, key=lambda p: (not p[0], p[1] is not None))[0]


def _task_sources(needle: str, history: list[dict], tool: str) -> list[Source]:
    sources = []
    for item in history:
        placements = _placement(needle, clauses.normalise(item.get("content") or ""), tool)
        if placements:
            whole, negated_by = _best(placements)
            sources.append(Source(
                where="task", actor=str(item.get("actor") or ""), name=item.get("name") or "", seq=item.get("seq"),
                event_id=item.get("id"), whole_clause=whole, negated=negated_by is not None,
                negation_cue=negated_by.cue if negated_by else "",
            ))
    return sources


def _memory_sources(needle: str, documents, tool: str) -> list[Source]:
    sources = []
    for doc in documents:
        in_lines = False
        for line in getattr(doc, "lines", ()) or ():
            placements = _placement(needle, clauses.normalise(line.text), tool)
            if placements:
                in_lines = True
                whole, negated_by = _best(placements)
                sources.append(Source(
                    where="memory", actor="memory", name=doc.label, path=doc.path, author_kind=line.author_kind,
                    author_label=line.author_label, whole_clause=whole, negated=negated_by is not None,
                    negation_cue=negated_by.cue if negated_by else "",
                ))
        if not in_lines:
            # In the document but in no line with known provenance: found, never the user's (fail closed).
            placements = _placement(needle, clauses.normalise(doc.content), tool)
            if placements:
                whole, negated_by = _best(placements)
                sources.append(Source(
                    where="memory", actor="memory", name=doc.label, path=doc.path, author_kind="unknown",
                    whole_clause=whole, negated=negated_by is not None,
                    negation_cue=negated_by.cue if negated_by else "",
                ))
    return sources


def check(justification: str, history: list[dict], documents=(), tool: str = "") -> EvidenceCheck:
    """history: [{"actor", "content", "name"?, "seq"?, "id"?}]; documents: memory ContextDocuments;
    tool: the action judged (its own verb is not a negation, see negation.ACTION_CUES).

    A quote is looked up inside each event and each memory line separately, so words joined
    across two events are not found."""
    results = []
    for quote in extract_quotes(justification):
        needle = clauses.unwrap_values(clauses.normalise(quote))
        sources = _task_sources(needle, history, tool) + _memory_sources(needle, documents, tool)
        results.append(QuoteCheck(quote=quote, found=bool(sources), sources=sources))
    return EvidenceCheck(quotes=results)
