"""How an audit entry reads: the label of its action and the fields it changed. Kept apart from
`lindy.audit` (which writes entries) so the AuditEntry model can use it without importing its writer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What each action is called on the audit page, filled by each app's AppConfig.ready.
_LABELS: dict[str, str] = {}


def labels_register(labels: dict[str, str]) -> None:
    _LABELS.update(labels)


def label_of(action: str) -> str:
    """The registered label, else the action itself made readable ("opt_out.changed" -> "Opt out changed")."""
    if action in _LABELS:
        return _LABELS[action]
    return action.replace(".", " ").replace("_", " ").capitalize()


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: Any
    after: Any

    @property
    def names_variable(self) -> bool:
        """The field holds the name of an environment variable (router.Provider.api_key_env)."""
        return self.field.endswith("_env")


MISSING = "—"


def changes(entry: Any) -> list[FieldChange]:
    """The entry's fields that differ, before → after, in the order they were recorded. A creation
    shows every field after; a removal every field before."""
    before, after = entry.before or {}, entry.after or {}
    keys = list(dict.fromkeys([*before, *after]))
    rows = []
    for key in keys:
        old, new = before.get(key, MISSING), after.get(key, MISSING)
        if entry.before is not None and entry.after is not None and old == new:
            continue
        rows.append(FieldChange(key, MISSING if entry.before is None else old, MISSING if entry.after is None else new))
    return rows
