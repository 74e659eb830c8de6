"""The one audit log: every change to who may do what, or to what the assistant may do or spend,
is recorded here by the service (or admin action) that makes it, in its transaction. Apps call
`record`; nothing else writes AuditEntry rows."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.forms.models import model_to_dict

from .audit_reading import MISSING, FieldChange, changes, label_of, labels_register  # noqa: F401  (the audit API)
from .models import AuditEntry, Team

# Values longer than this are cut in the log: it records what changed, never a body.
MAX_VALUE_CHARS = 500


def snapshot(obj: models.Model, fields: Iterable[str] | None = None) -> dict[str, Any]:
    """The object's fields as JSON-ready values (foreign keys as ids, decimals as strings)."""
    data = model_to_dict(obj, fields=list(fields) if fields is not None else None)
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def object_type_of(obj: models.Model) -> str:
    """`prompt_variant` for PromptVariant: the class name in snake case."""
    name = type(obj).__name__
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _bounded(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    out = {}
    for key, item in value.items():
        if isinstance(item, str) and len(item) > MAX_VALUE_CHARS:
            item = item[:MAX_VALUE_CHARS] + "…"
        out[key] = item
    return out


def record(
    *, actor, action: str, obj: models.Model | None = None, object_type: str = "", object_id: Any = "",
    label: str = "", team: Team | int | None = None, before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEntry:
    """Record one change. `actor` is the user who made it (None, or an anonymous user, for the
    system); `obj` names the object, or `object_type`/`object_id`/`label` when it is gone or is no
    row; `team` the team whose admins may read the entry."""
    real_actor = actor if getattr(actor, "pk", None) else None
    return AuditEntry.objects.create(
        actor=real_actor, actor_label=str(real_actor)[:200] if real_actor else "",
        team_id=team if isinstance(team, int) or team is None else team.pk,
        action=action,
        object_type=object_type or (object_type_of(obj) if obj is not None else ""),
        object_id=str(object_id if object_id != "" or obj is None else obj.pk),
        object_repr=(label or (str(obj) if obj is not None else ""))[:200],
        before=_bounded(before), after=_bounded(after),
    )
