"""Deleting a user and everything that is theirs, and saying what was removed.

Most of a user's data goes with the user row by cascade (their memory file system with its files,
revisions, sources and items; their tasks, decisions, outbox, API tokens, Gmail account...). Some
rows only point at the user through a link that is cleared rather than cascaded, so that they
outlive a *profile* (inbound text messages keep their body when a phone number is re-paired): the
app that owns such rows registers an eraser here, from its AppConfig.ready, which deletes them
first. Erasers return Django's deletion counts ({"app.Model": n}).

Rows that are not the user's own stay, without the user: team memory revisions they wrote, model
call records (cost accounting), alerts they acknowledged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

Eraser = Callable[[object], Mapping[str, int]]

_ERASERS: dict[str, Eraser] = {}


def register(name: str, eraser: Eraser) -> None:
    _ERASERS[name] = eraser


def erasers() -> list[Eraser]:
    return [_ERASERS[name] for name in sorted(_ERASERS)]


def merge(total: Counter, counts: Mapping[str, int]) -> None:
    for label, count in counts.items():
        if count:
            total[label] += count
