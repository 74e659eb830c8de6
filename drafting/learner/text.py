"""Text helpers the learner shares with the pairs: the deterministic similarity and quote removal
come from drafting's own pair scoring when it is there, so the learner measures what the pairs
measure."""

from __future__ import annotations

import re

_QUOTE_HEADER = re.compile(r"^\s*On .{0,200}wrote:\s*$", re.M)


def strip_quotes(text: str) -> str:
    """The text without the quoted thread (lines from an "On ... wrote:" header, "> " lines)."""
    text = text or ""
    match = _QUOTE_HEADER.search(text)
    if match:
        text = text[:match.start()]
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">")).strip()


def similarity(draft: str, sent: str) -> float | None:
    """drafting.similarity's score of a (replayed) draft against the sent email: the pairs' own
    measure, after the same cleaning; None when unscorable."""
    from .. import similarity as pair_similarity

    return pair_similarity.score(draft, sent).similarity
