"""The router's entries in the one audit log (lindy.audit): one per configuration change or
rollout change, written by the service that makes it, in its transaction. Router changes belong
to no team: superusers read them."""

from __future__ import annotations

from django.db import models

from lindy import audit
from lindy.audit import snapshot
from lindy.models import AuditEntry

__all__ = ["audit_event_record", "snapshot"]


def _object_type(obj: models.Model) -> str:
    name = obj._meta.model_name or type(obj).__name__.lower()
    return "prompt_variant" if name == "promptvariant" else name


def audit_event_record(*, actor, action: str, obj: models.Model, before: dict | None, after: dict | None) -> AuditEntry:
    """Record one change. `actor` is the user who made it, or None for the system."""
    return audit.record(actor=actor, action=action, obj=obj, object_type=_object_type(obj), before=before, after=after)
