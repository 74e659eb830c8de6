"""Reads of hydration, always through the permission rules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db.models import OuterRef, QuerySet, Subquery
from django.urls import reverse
from django.utils import timezone

from google_workspace.models import GmailAccount
from memory import blame as memory_blame
from memory import permissions as memory_permissions
from memory import selectors as memory_selectors
from memory.models import FileSystem, Revision

from . import permissions
from .models import Fact, FileSource, Item, Run, Schedule, SourceKind, SourceState
from .sources import SOURCES, sources_for


def run_get(user, run_id) -> Run:
    return permissions.get_visible_or_404(
        permissions.visible_hydration_runs(user).select_related("filesystem", "filesystem__team",
                                                                 "filesystem__owner", "revision", "triggered_by"),
        pk=run_id,
    )


def runs_for(filesystem) -> QuerySet[Run]:
    return Run.objects.filter(filesystem=filesystem).select_related("revision").order_by("-created_at", "-pk")


def last_run(filesystem) -> Run | None:
    return runs_for(filesystem).first()


def active_run(filesystem) -> Run | None:
    return Run.objects.filter(filesystem=filesystem, status__in=Run.ACTIVE).first()


def source_states(filesystem) -> list[SourceState]:
    """The file system's sources, one state each: the stored row, or for a source never run
    nor configured an unsaved row with the defaults (on, never run). Never writes."""
    existing = {s.source: s for s in SourceState.objects.filter(filesystem=filesystem)}
    return [existing.get(source.kind) or SourceState(filesystem=filesystem, source=source.kind)
            for source in sources_for(filesystem)]


@dataclass
class SourceRow:
    kind: str
    label: str
    state: SourceState
    reads: list[str]


def source_rows(filesystem, states: list[SourceState]) -> list[SourceRow]:
    return [SourceRow(s.source, s.get_source_display(), s, SOURCES[s.source].describe(filesystem)) for s in states]


def sent_mail(user, limit: int = 50) -> QuerySet[Item]:
    """The user's own sent email as hydration stored it, newest first: the examples of how they
    write (for email drafting). Only items the Gmail source marked as the owner's words — sent
    from their own address AND filed by Gmail as SENT — so a forged From never counts."""
    return (Item.objects.filter(filesystem__owner=user, filesystem__kind=FileSystem.Kind.USER,
                                source=SourceKind.GMAIL, author_kind=Item.AuthorKind.OWNER)
            .order_by("-occurred_at", "-pk")[:limit])


def run_items(run: Run) -> QuerySet[Item]:
    """The items a run took in (or, when it wrote nothing yet, the ones it fetched)."""
    items = Item.objects.filter(processed_by=run)
    if not items.exists():
        items = Item.objects.filter(fetched_by=run)
    return items.order_by("occurred_at", "pk")


def run_facts(run: Run) -> list[Fact]:
    return list(run.facts.prefetch_related("items").order_by("position"))


def run_for_revision(revision: Revision) -> Run | None:
    return Run.objects.filter(revision=revision).first()


def file_sources(run: Run) -> dict[str, list[Item]]:
    grouped: dict[str, list[Item]] = {}
    for row in FileSource.objects.filter(run=run).select_related("item").order_by("path", "item__occurred_at"):
        grouped.setdefault(row.path, []).append(row.item)
    return grouped


# --- "Why does the assistant know this?" ------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def _match(line: str, fact_text: str) -> float:
    a, b = _words(line), _words(fact_text)
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


@dataclass
class BlameLine:
    number: int
    text: str
    revision_id: int | None
    run: Run | None = None
    items: list[Item] = field(default_factory=list)
    author_kind: str = memory_blame.OTHERS  # "user", "others" or "team" (memory.blame)
    author_label: str = ""


def blame(filesystem, file) -> list[BlameLine]:
    """Each line of the file with the revision that last wrote it and its author (memory's
    blame), and for lines a hydration run wrote, the source items behind them."""
    lines = memory_blame.blame_file(filesystem, file)
    path = file.path
    runs = {r.revision_id: r for r in Run.objects.filter(revision_id__in={line.revision_id for line in lines
                                                                          if line.revision_id})}
    facts_by_run: dict[int, list[Fact]] = {}
    for fact in Fact.objects.filter(run__in=list(runs.values())).prefetch_related("items"):
        facts_by_run.setdefault(fact.run_id, []).append(fact)
    sources_by_run: dict[tuple[int, str], list[Item]] = {}
    for row in FileSource.objects.filter(run__in=list(runs.values()), path=path).select_related("item"):
        sources_by_run.setdefault((row.run_id, row.path), []).append(row.item)
    result = []
    for line in lines:
        text = line.text
        run = runs.get(line.revision_id) if line.revision_id else None
        items: list[Item] = []
        if run is not None and text.strip():
            scored = sorted(((_match(text, f.text), f) for f in facts_by_run.get(run.pk, [])), key=lambda p: -p[0])
            best = [f for score, f in scored if score >= 0.6 and score == scored[0][0]]
            for fact in best:
                items += [i for i in fact.items.all() if i not in items]
            if not items:
                items = sources_by_run.get((run.pk, path), [])
        result.append(BlameLine(line.number, text, line.revision_id, run, items, line.author_kind, line.author_label))
    return result


def home_tile(user) -> dict | None:
    """The home page's memory tile: for each file system the user reads, the verifier's verdict
    on it now, its last hydration run and when the next scheduled one is due. Two queries (the
    file systems with their last run's id and next due time, then those runs) and one cached
    verdict read per file system (a user reads their own and their teams')."""
    newest = Run.objects.filter(filesystem=OuterRef("pk")).order_by("-created_at", "-pk").values("pk")[:1]
    due_at = Schedule.objects.filter(filesystem=OuterRef("pk")).values("next_run_at")[:1]
    filesystems = memory_selectors.filesystems_for(user, last_run_pk=Subquery(newest), due_at=Subquery(due_at))
    if not filesystems:
        return None
    runs = Run.objects.only("pk", "status", "created_at").in_bulk(
        [getattr(fs, "last_run_pk") for fs in filesystems])  # noqa: B009 (annotation)
    rows = []
    now = timezone.now()
    for fs in filesystems:
        last = runs.get(getattr(fs, "last_run_pk"))  # noqa: B009
        due = getattr(fs, "due_at")  # noqa: B009
        rows.append({
            "fs": fs, "violations": memory_selectors.status(fs), "last": last,
            "active": last is not None and last.status in Run.ACTIVE, "next_run_at": due,
            "overdue": due is not None and due <= now,
            "can_edit": memory_permissions.can_edit_filesystem(user, fs),
        })
    return {"rows": rows, "failing": sum(1 for row in rows if row["violations"])}


# --- The first-minute checklist (lindy.home.Step) --------------------------------------------------

def gmail_connected(user) -> bool:
    """Done when the user's Google connection (google_workspace.GmailAccount) is connected."""
    return GmailAccount.objects.filter(user=user, status=GmailAccount.Status.CONNECTED).exists()


def gmail_connect_url(user) -> str:
    """Where Gmail is connected: the Gmail panel of the user's own memory's sources page."""
    fs_id = FileSystem.objects.filter(kind=FileSystem.Kind.USER, owner=user).values_list("pk", flat=True).first()
    if fs_id is None:
        return reverse("hydration:home")
    return reverse("hydration:filesystem", args=[fs_id]) + "#gmail"
