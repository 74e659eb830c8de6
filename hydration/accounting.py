"""Which items a run took in, and why: the rule that an item is marked processed only when its
facts are in the memory the run leaves (or were dropped by a rule that says why).

    outcome = account(items=pending, facts=summary.facts, draft=result.draft, max_left_out=2)
    outcome.processed   # item id -> the note saying where its facts went (or why none)
    outcome.kept        # item id -> the note saying why it waits for the next run
    outcome.dropped     # item id -> the note saying why it is dropped (processed, no facts kept)

A fact is in memory when its text is in a file of the final draft (compared without case or
extra spaces), or when the agent cited one of its items for a file of the final draft (a model
rewords facts; its citation is its word that the file holds them). An item whose facts are all
in memory is processed; an item with no fact at all (the summarizer found nothing worth
remembering) is processed saying so; an item some of whose facts the agent wrote nowhere is kept
for the next run, and dropped only once a passing agent has left it out `max_left_out` times.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.models import MemoryFile

NO_FACT = "Nothing worth remembering: the summarizer found no fact in it."


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass
class Outcome:
    processed: dict[int, str] = field(default_factory=dict)
    kept: dict[int, str] = field(default_factory=dict)
    dropped: dict[int, str] = field(default_factory=dict)
    # Item ids kept because the agent left them out (their left_out count goes up).
    left_out: set[int] = field(default_factory=set)


class _Memory:
    """The final draft's text, searched file by file: the files the run changed first, the rest
    (loaded in one query) only for a fact not found there."""

    def __init__(self, agent_draft) -> None:
        self.draft = agent_draft.draft
        files = self.draft.files
        self.changed = {path: _norm(self.draft.content(path)) for path in sorted(self.draft.changed_paths())
                        if path in files}
        self._rest: dict[str, str] | None = None

    def rest(self) -> dict[str, str]:
        if self._rest is None:
            files = self.draft.files
            unloaded = {f.id: path for path, f in files.items()
                        if path not in self.changed and f.content is None and f.id is not None}
            texts = {path: _norm(f.content) for path, f in files.items()
                     if path not in self.changed and f.content is not None}
            for pk, content in MemoryFile.objects.filter(pk__in=list(unloaded)).values_list("pk", "content"):
                texts[unloaded[pk]] = _norm(content)
            self._rest = texts
        return self._rest

    def written_in(self, text: str) -> list[str]:
        return [path for path, content in self.changed.items() if text in content]

    def already_in(self, text: str) -> list[str]:
        return [path for path, content in self.rest().items() if text in content]


def account(*, items, facts: list[dict], draft, max_left_out: int) -> Outcome:
    """`draft` is the agent's passing draft (hydration.agent.AgentDraft)."""
    memory = _Memory(draft)
    files = draft.draft.files
    cited: dict[int, set[str]] = {}
    for path, ids in draft.sources.items():
        if path in files:
            for item_id in ids:
                cited.setdefault(item_id, set()).add(path)
    facts_of: dict[int, list[dict]] = {}
    for fact in facts:
        for item_id in fact["item_ids"]:
            facts_of.setdefault(item_id, []).append(fact)

    outcome = Outcome()
    where_cache: dict[str, tuple[list[str], list[str]]] = {}

    def where(fact: dict) -> tuple[list[str], list[str]]:
        """(files this run wrote it to, files that already held it)."""
        text = _norm(fact["text"])
        if text not in where_cache:
            written = memory.written_in(text)
            where_cache[text] = (written, [] if written else memory.already_in(text))
        return where_cache[text]

    for item in items:
        its_facts = facts_of.get(item.pk, [])
        if not its_facts:
            outcome.processed[item.pk] = NO_FACT
            continue
        written, already, missing = set(cited.get(item.pk, ())), set(), 0
        for fact in its_facts:
            fact_written, fact_already = where(fact)
            written.update(fact_written)
            already.update(fact_already)
            if not fact_written and not fact_already:
                missing += 1
        if missing and not cited.get(item.pk):
            tries = item.left_out + 1
            if tries >= max_left_out:
                outcome.dropped[item.pk] = (
                    f"Left out by the memory agent in {tries} runs: none of its {missing} unwritten fact(s) made it "
                    "into memory, so it is dropped as not worth keeping.")[:500]
            else:
                outcome.kept[item.pk] = (
                    f"Kept for the next run: the memory agent wrote {missing} of its fact(s) nowhere "
                    f"(left out {tries} of {max_left_out} times before it is dropped).")[:500]
                outcome.left_out.add(item.pk)
            continue
        if written:
            outcome.processed[item.pk] = f"Written to {', '.join(sorted(written))}."[:500]
        else:
            outcome.processed[item.pk] = f"Already in memory ({', '.join(sorted(already))}): nothing new to write."[:500]
    return outcome
