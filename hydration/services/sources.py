"""Hydration's sources for one file system: which exist and are switched on, and storing what
they fetched (an item already stored is left as it is)."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Model
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery
from django.utils import timezone

from lindy import audit, bulk
from memory.models import FileSystem

from ..models import Item, Run, SourceState
from ..sources import SOURCES, sources_for


def source_states_ensure(*, filesystem: FileSystem) -> list[SourceState]:
    """The file system's sources, one stored row each (created here, in a write path, for a
    source seen for the first time). Pages read selectors.source_states, which never writes."""
    existing = {s.source: s for s in SourceState.objects.filter(filesystem=filesystem)}
    states = []
    for source in sources_for(filesystem):
        state = existing.get(source.kind)
        if state is None:
            state, _ = SourceState.objects.get_or_create(filesystem=filesystem, source=source.kind)
        states.append(state)
    return states


def source_set_enabled(*, filesystem: FileSystem, source: str, enabled: bool, actor=None) -> SourceState:
    if source not in SOURCES or not SOURCES[source].applies_to(filesystem):
        raise ValueError(f"{source!r} is not a source of this memory.")
    state, _ = SourceState.objects.get_or_create(filesystem=filesystem, source=source)
    if state.enabled != enabled:
        with transaction.atomic():
            state.enabled = enabled
            state.save(update_fields=["enabled"])
            # A team memory's sources are its admins' to read; a person's own, superusers'.
            audit.record(actor=actor, action="source.enabled_set", obj=state, label=f"{source} for {filesystem}",
                         team=filesystem.team_id, before={"enabled": not enabled}, after={"enabled": enabled})
    return state


def items_store(*, filesystem: FileSystem, source: str, items, run: Run | None) -> int:
    """Store items; an item already stored (same file system, source and external id) is
    left as it is. Returns how many were new."""
    if bulk.supported():
        return _store_postgresql(filesystem, source, list(items), run)
    rows: list[Model] = [
        Item(filesystem=filesystem, source=source, external_id=i.external_id[:255], author=i.author[:255],
             author_kind=i.author_kind, author_name=i.author_name[:255], title=i.title[:300], reference=i.reference[:1000], text=i.text, occurred_at=i.occurred_at,
             fetched_by=run)
        for i in items
    ]
    return sum(_insert_new(rows[start:start + ITEM_BATCH]) for start in range(0, len(rows), ITEM_BATCH))


ITEM_BATCH = 500


def _store_postgresql(filesystem: FileSystem, source: str, items: list, run: Run | None) -> int:
    """The same rows as the portable path, a column per array, ITEM_BATCH rows a statement."""
    now = timezone.now()
    new = 0
    for start in range(0, len(items), ITEM_BATCH):
        batch = items[start:start + ITEM_BATCH]
        n = len(batch)
        new += bulk.rows_insert(Item, {
            "filesystem": [filesystem.pk] * n, "source": [source] * n,
            "external_id": [i.external_id[:255] for i in batch], "author": [i.author[:255] for i in batch],
            "author_kind": [i.author_kind for i in batch], "author_name": [i.author_name[:255] for i in batch],
            "title": [i.title[:300] for i in batch], "reference": [i.reference[:1000] for i in batch],
            "text": [i.text for i in batch], "occurred_at": [i.occurred_at for i in batch],
            "fetched_by": [run.pk if run is not None else None] * n, "processed_by": [None] * n,
            "processed_note": [""] * n, "left_out": [0] * n, "created_at": [now] * n,
        }, ignore_conflicts=True)
    return new
_ITEM_FIELDS = [f for f in Item._meta.concrete_fields if not f.primary_key]


def _insert_new(rows: list[Model]) -> int:
    """bulk_create(ignore_conflicts=True) as one statement that also says how many rows were new:
    the database's row count of INSERT ... ON CONFLICT DO NOTHING, which bulk_create does not
    hand back (counting the items before and after cost two more statements per source)."""
    if not rows:
        return 0
    query = InsertQuery(Item, on_conflict=OnConflict.IGNORE)
    query.insert_values(_ITEM_FIELDS, rows)
    new = 0
    with connection.cursor() as cursor:
        for sql, params in query.get_compiler(connection=connection).as_sql():
            cursor.execute(sql, params)
            new += cursor.rowcount
    return new


_STATE_FIELDS = ["status", "last_error", "last_error_at", "cursor", "last_success_at"]
