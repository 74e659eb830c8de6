"""Checked evidence: every quote in a justification, looked up verbatim in the task history
and the user's memories, with who wrote it.

A justification is a claim. "The user said X" is only worth something if X is in the
history, written by the user. The result goes to the validator model and to the reviewer.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

# Straight double quotes, curly double quotes, and guillemets. Single quotes are left out:
# they are apostrophes far more often than quotation marks.
_QUOTE_PATTERNS = [
    re.compile(r'"([^"\n]{3,}?)"'),
    re.compile(r"“([^”\n]{3,}?)”"),
    re.compile(r"«\s?([^»\n]{3,}?)\s?»"),
]
MAX_QUOTES = 20


def _normalise(text: str) -> str:
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"\s+", " ", text).strip().casefold()


def extract_quotes(justification: str) -> list[str]:
    found: list[tuple[int, str]] = []
    for pattern in _QUOTE_PATTERNS:
        for match in pattern.finditer(justification or ""):
            quote = match.group(1).strip().rstrip(".,;:").strip()
            if len(quote) >= 3:
                found.append((match.start(), quote))
    seen, quotes = set(), []
    for _, quote in sorted(found):
        key = _normalise(quote)
        if key not in seen:
            seen.add(key)
            quotes.append(quote)
    return quotes[:MAX_QUOTES]


@dataclass
class Source:
    where: str  # "task" or "memory"
    actor: str  # user | assistant | tool | external | memory
    name: str = ""  # who, for an external party; the memory's label
    seq: int | None = None  # the event's number in the task
    path: str = ""  # the memory file


@dataclass
class QuoteCheck:
    quote: str
    found: bool
    sources: list[Source] = field(default_factory=list)

    @property
    def by_user(self) -> bool:
        return any(s.actor == "user" or (s.where == "memory" and s.name.startswith("user:")) for s in self.sources)

    @property
    def only_by_others(self) -> bool:
        return self.found and not self.by_user


@dataclass
class EvidenceCheck:
    quotes: list[QuoteCheck]

    @property
    def summary(self) -> str:
        if not self.quotes:
            return "The justification quotes nothing."
        parts = []
        for check in self.quotes:
            if not check.found:
                parts.append(f'"{check.quote}": NOT FOUND in the task history or memories')
            else:
                who = "; ".join(_describe_source(s) for s in check.sources)
                parts.append(f'"{check.quote}": found, written by {who}')
        return "\n".join(parts)

    def to_dict(self) -> dict:
        return {
            "quotes": [
                {**asdict(check), "by_user": check.by_user} for check in self.quotes
            ],
            "all_found": all(c.found for c in self.quotes) if self.quotes else False,
            "any_by_user": any(c.by_user for c in self.quotes),
            "summary": self.summary,
        }


def _describe_source(source: Source) -> str:
    if source.where == "memory":
        owner = "the user's memory" if source.name.startswith("user:") else "the team's memory"
        return f"{owner} ({source.name} {source.path})"
    who = {
        "user": "the user",
        "assistant": "the assistant",
        "tool": "a tool result",
        "external": "an external party",
    }.get(source.actor, source.actor)
    if source.name:
        who += f" ({source.name})"
    return f"{who}, event #{source.seq}" if source.seq is not None else who


def check(justification: str, history: list[dict], documents=()) -> EvidenceCheck:
    """history: [{"actor", "content", "name"?, "seq"?}]; documents: memory ContextDocuments."""
    prepared = [(item, _normalise(item.get("content") or "")) for item in history]
    prepared_docs = [(doc, _normalise(doc.content)) for doc in documents]
    results = []
    for quote in extract_quotes(justification):
        needle = _normalise(quote)
        sources = [
            Source(where="task", actor=item.get("actor", ""), name=item.get("name") or "", seq=item.get("seq"))
            for item, text in prepared
            if needle in text
        ]
        sources += [
            Source(where="memory", actor="memory", name=doc.label, path=doc.path)
            for doc, text in prepared_docs
            if needle in text
        ]
        results.append(QuoteCheck(quote=quote, found=bool(sources), sources=sources))
    return EvidenceCheck(quotes=results)
