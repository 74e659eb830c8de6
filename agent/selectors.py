"""Reads of the agent app, always through its permission rules."""

from __future__ import annotations

from django.db.models import QuerySet

from . import permissions
from .models import OutboxEntry


def outbox_list(user, status: str | None = None) -> QuerySet[OutboxEntry]:
    queryset = permissions.visible_outbox(user).select_related("task", "decision")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-pk")
