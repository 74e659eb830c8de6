"""What a viewer without body access gets: the same object with its private text replaced by
"hidden", made by the selector that reads it, so no template or schema has to remember to skip a
field. A copy: the row itself, and any other viewer's copy, keep their text."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TypeVar

HIDDEN = "hidden"
T = TypeVar("T")


def redacted(obj: T, fields: Iterable[str]) -> T:
    """A shallow copy of `obj` whose `fields` read HIDDEN (each item of a list; a dict: one entry)."""
    clone = copy.copy(obj)
    # A field the query deferred is not read to learn whether it is empty: that would cost a query
    # per field and row on a list page, for text the viewer never sees.
    deferred = obj.get_deferred_fields() if hasattr(obj, "get_deferred_fields") else set()
    for name in fields:
        if name in deferred:
            setattr(clone, name, HIDDEN)
            continue
        value = getattr(obj, name, "")
        if isinstance(value, list):
            setattr(clone, name, [HIDDEN] * len(value))  # how many stays a number the viewer may read
        elif isinstance(value, dict):
            setattr(clone, name, {"hidden": HIDDEN} if value else {})
        else:
            setattr(clone, name, HIDDEN if value else "")
    clone.redacted = True  # type: ignore[attr-defined]
    clone.save = _never_saved  # type: ignore[attr-defined]  # "hidden" must never reach the row
    return clone


def _never_saved(*args, **kwargs):
    raise RuntimeError("A redacted copy is for reading: save the row it was made from.")
