"""/api/drafting/: the user's drafts and the charts' numbers."""

from datetime import datetime
from typing import Literal

from django.http import Http404
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate
from pydantic import field_validator

from lindy.pagination import BoundedLimitOffset

from . import permissions, selectors

router = Router(tags=["drafting"])


class PairOut(Schema):
    sent_message_id: str
    sent_clean: str
    similarity: float | None
    scorable: bool
    unscorable_reason: str
    heavy_edit: bool
    meaningful: bool
    measure: str


class DraftOut(Schema):
    id: int
    status: str
    skip_reason: str
    inbound_from: str
    inbound_subject: str
    inbound_at: datetime | None
    gmail_thread_id: str
    gmail_draft_id: str
    body: str
    target_name: str
    prompt_variant: str
    context_version: int | None
    created_at: datetime
    pair: PairOut | None = None

    @staticmethod
    def resolve_pair(obj):
        return getattr(obj, "pair", None)


class DraftFilter(Schema):
    status: Literal["all", "drafted", "skipped", "failed", "pending"] = "all"


class ChartsIn(Schema):
    team: int | None = Field(None, ge=1, description="A team you administer; empty for your own pairs.")
    days: int = Field(30, description="7, 30 or 90.")
    period: Literal["day", "week"] = "day"

    @field_validator("days")
    @classmethod
    def _days(cls, value: int) -> int:
        if value not in (7, 30, 90):
            raise ValueError("days is 7, 30 or 90")
        return value


def _member(request):
    if not permissions.can_view_drafts(request.user):
        raise Http404("Drafts belong to team members.")


@router.get("/drafts", response=list[DraftOut])
@paginate(BoundedLimitOffset)
def draft_list(request, filters: Query[DraftFilter]):
    _member(request)
    return selectors.drafts_for(request.user, filters.status)


@router.get("/drafts/{draft_id}", response=DraftOut)
def draft_detail(request, draft_id: int):
    _member(request)
    return selectors.draft_get(request.user, draft_id)


@router.get("/charts")
def charts(request, params: Query[ChartsIn]):
    _member(request)
    return selectors.charts(user=request.user, team_id=params.team, days=params.days, period=params.period)
