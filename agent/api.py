"""The outbox API: what the assistant executed for you (mounted at /api/validator/outbox)."""

# No `from __future__ import annotations` here: ninja resolves the query parameters of the
# paginated list at request time, and string annotations would not resolve then.

from datetime import datetime
from typing import Literal

from ninja import Router, Schema
from ninja.pagination import paginate

from lindy.pagination import BoundedLimitOffset

from . import selectors

router = Router(tags=["agent"])

OutboxStatus = Literal["recorded", "pending", "sent", "failed"]


class OutboxOut(Schema):
    id: int
    task_id: int | None
    decision_id: int | None
    tool: str
    description: str
    arguments: dict
    adapter: str
    status: str
    sent: bool
    response: dict | None
    error: str
    provider_id: str
    link: str
    created_at: datetime

    @staticmethod
    def resolve_sent(obj) -> bool:
        return obj.status == "sent"


@router.get("/outbox", response=list[OutboxOut],
            summary="What the assistant executed for you: sent, failed, or recorded only (no live integration)")
@paginate(BoundedLimitOffset)
def outbox_list(request, status: OutboxStatus | None = None):
    return selectors.outbox_list(request.user, status)
