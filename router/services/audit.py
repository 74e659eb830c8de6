"""The router's audit trail: one AuditEvent per configuration change, written by the
service that makes the change, in its transaction."""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.forms.models import model_to_dict

from ..models import AuditEvent


def snapshot(obj: models.Model, fields: list[str] | None = None) -> dict[str, Any]:
    """The object's fields as JSON-ready values (foreign keys as ids, decimals as strings)."""
    return json.loads(json.dumps(model_to_dict(obj, fields=fields), cls=DjangoJSONEncoder))


def _object_type(obj: models.Model) -> str:
    name = obj._meta.model_name or type(obj).__name__.lower()
    return "prompt_variant" if name == "promptvariant" else name


def audit_event_record(
    *, actor, action: str, obj: models.Model, before: dict[str, Any] | None, after: dict[str, Any] | None,
) -> AuditEvent:
    """Record one change. `actor` is the user who made it, or None for the system."""
    return AuditEvent.objects.create(
        actor=actor if getattr(actor, "pk", None) else None, action=action,
        object_type=_object_type(obj),
        object_id=str(obj.pk), object_repr=str(obj)[:200], before=before, after=after,
    )
