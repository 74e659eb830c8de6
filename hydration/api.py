"""The hydration JSON API under /api/hydration/, with the same permissions as the pages."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.core.exceptions import PermissionDenied
from ninja import Field, Query, Router, Schema, Status

from lindy.api_errors import ApiError
from lindy.pagination import MAX_LIMIT, PageIn
from memory import selectors as memory_selectors

from . import permissions, selectors, services
from .models import Run
from .sources import SOURCES

router = Router(tags=["hydration"])


class SourceOut(Schema):
    source: str
    enabled: bool
    status: str
    last_success_at: datetime | None
    last_error: str
    reads: list[str]


class SourceIn(Schema):
    enabled: bool


class RunOut(Schema):
    id: int
    filesystem_id: int
    status: str
    stage: str
    trigger: str
    sources: dict
    item_count: int
    fact_count: int
    verifier_rounds: int
    violations: list
    model_calls: int
    input_tokens: int
    output_tokens: int
    cost: Decimal
    revision_id: int | None
    agent_message: str = Field(description="What the run did, read from its revision; or, when it needs "
                                            "attention, what to split or which budget to raise.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RunStartOut(Schema):
    created: bool
    run: RunOut


class ItemOut(Schema):
    id: int
    source: str
    external_id: str
    author: str
    author_kind: str = Field(description="Whose words: owner, teammate, external, mixed, or empty (unknown).")
    author_name: str
    title: str
    reference: str
    text: str
    occurred_at: datetime
    processed_by_id: int | None = Field(description="The run that took it in; null while it waits for a run.")
    processed_note: str = Field(description="Where its facts went, why it was dropped, or why it waits.")


def _fs(request, fs_id):
    if not permissions.can_use_memory(request.user):
        raise ApiError(404, "No such file system.")
    return memory_selectors.filesystem_get(request.user, fs_id)


def _runnable(request, fs_id):
    fs = _fs(request, fs_id)
    if not permissions.can_run_hydration(request.user, fs):
        raise PermissionDenied("You may read this memory's runs but not run or configure it.")
    return fs


def _source_out(fs, state) -> dict:
    return {"source": state.source, "enabled": state.enabled, "status": state.status,
            "last_success_at": state.last_success_at, "last_error": state.last_error,
            "reads": SOURCES[state.source].describe(fs)}


@router.get("/filesystems/{fs_id}/sources", response=list[SourceOut])
def sources_list(request, fs_id: int):
    fs = _fs(request, fs_id)
    return [_source_out(fs, s) for s in selectors.source_states(fs)]


@router.put("/filesystems/{fs_id}/sources/{source}", response=SourceOut)
def source_update(request, fs_id: int, source: str, payload: SourceIn):
    fs = _runnable(request, fs_id)
    if source not in SOURCES or not SOURCES[source].applies_to(fs):
        raise ApiError(404, f"{source!r} is not a source of this memory.")
    return _source_out(fs, services.source_set_enabled(filesystem=fs, source=source, enabled=payload.enabled,
                                                              actor=request.user))


class RunsPageIn(PageIn):
    limit: int = Field(20, ge=1, le=MAX_LIMIT)  # a run page shows the latest few


@router.get("/filesystems/{fs_id}/runs", response=list[RunOut])
def runs_list(request, fs_id: int, page: Query[RunsPageIn]):
    fs = _fs(request, fs_id)
    return list(selectors.runs_for(fs)[page.slice])


@router.post("/filesystems/{fs_id}/runs", response={201: RunStartOut, 200: RunStartOut})
def run_start(request, fs_id: int):
    fs = _runnable(request, fs_id)
    run, created = services.run_trigger(filesystem=fs, trigger=Run.Trigger.MANUAL, user=request.user)
    return Status(201 if created else 200, {"created": created, "run": run})


@router.get("/runs/{run_id}", response=RunOut)
def run_get(request, run_id: int):
    if not permissions.can_use_memory(request.user):
        raise ApiError(404, "No such file system.")
    return selectors.run_get(request.user, run_id)


@router.get("/runs/{run_id}/items", response=list[ItemOut])
def run_items(request, run_id: int, page: Query[PageIn]):
    if not permissions.can_use_memory(request.user):
        raise ApiError(404, "No such file system.")
    run = selectors.run_get(request.user, run_id)
    return list(selectors.run_items(run)[page.slice])
