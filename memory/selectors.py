"""Reads of memory, always through the permission rules."""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from lindy.counting import capped_count

from . import links, permissions, portable
from .draft import Change, MemoryDraft, MemoryWriteError, TokenCounter, check_content, check_path
from .models import FileChange, FileSystem, MemoryFile, Revision
from .paths import INDEX, SPECIAL, PathError, clean_path
from .verifier import Violation, linked_paths, verify

logger = logging.getLogger(__name__)
CACHE_SECONDS = 24 * 3600


def _visible_with_head(user, **annotations) -> QuerySet[FileSystem]:
    """The file systems the user may see, each with its head revision read in the same query:
    every page keys its cached facts by it (see `facts`)."""
    head = Revision.objects.filter(filesystem=OuterRef("pk")).order_by("-created_at", "-pk").values("pk")[:1]
    return (permissions.visible_filesystems(user).select_related("team", "owner")
            .annotate(head_revision_pk=Subquery(head), **annotations))


def _remember_head(fs: FileSystem) -> FileSystem:
    setattr(fs, "_head_revision", _head_key(fs, getattr(fs, "head_revision_pk")))  # noqa: B009, B010 (annotation)
    return fs


def filesystems_for(user, **annotations) -> list[FileSystem]:
    """The user's own file system first, then their teams' by name, with their head revisions and
    the caller's `annotations` (subqueries about each file system, e.g. its last hydration run)."""
    filesystems = [_remember_head(fs) for fs in _visible_with_head(user, **annotations)]
    filesystems.sort(key=lambda fs: (fs.kind != FileSystem.Kind.USER, fs.team.name if fs.team is not None else ""))
    return filesystems


def filesystem_get(user, fs_id) -> FileSystem:
    """A file system the user may see (404 otherwise), with its head revision."""
    return _remember_head(permissions.get_visible_or_404(_visible_with_head(user), pk=fs_id))


def file_get(fs: FileSystem, path: str) -> MemoryFile:
    from django.http import Http404

    try:
        path = clean_path(path)
    except PathError:
        raise Http404("No such file.") from None
    found = MemoryFile.objects.filter(filesystem=fs, path=path).first()
    if found is None:
        raise Http404(f"There is no file {path}.")
    return found


def _head_key(fs: FileSystem, revision_pk) -> str:
    # The file system's creation time is part of it so a database rebuilt under a surviving cache
    # (ids reused) never matches old keys.
    return f"{revision_pk}@{fs.created_at.timestamp()}" if revision_pk is not None else "none"


def _head(fs: FileSystem) -> str:
    """The file system's latest revision, read once per request (kept on the instance)."""
    if not hasattr(fs, "_head_revision"):
        pk = (Revision.objects.filter(filesystem=fs).order_by("-created_at", "-pk")
              .values_list("pk", flat=True).first())
        setattr(fs, "_head_revision", _head_key(fs, pk))  # noqa: B010
    return getattr(fs, "_head_revision")  # noqa: B009


def forget_head(fs: FileSystem) -> None:
    """After a write through `fs`: its next read of a fact looks the head revision up again."""
    fs.__dict__.pop("_head_revision", None)


def _same(value):
    return value


@dataclass(frozen=True)
class CachedFact:
    """A fact about the files (the verdict, totals, a count), computed by `compute(fs)` and kept
    in the cache until the next revision or budget change. Every change to the files is a
    revision, so a page costs one indexed query instead of reading every row."""

    name: str
    compute: Callable[[FileSystem], Any]
    dump: Callable[[Any], Any] = _same
    load: Callable[[Any], Any] = _same


def facts(fs: FileSystem, *wanted: CachedFact) -> list:
    """The value of each fact at the head revision, in order: one cache round trip for all of
    them, and only the ones missing from the cache computed."""
    prefix = f"memory:{{}}:{fs.pk}:{_head(fs)}:{fs.file_token_budget}:{fs.always_loaded_token_budget}"
    keys = [prefix.format(fact.name) for fact in wanted]
    try:
        cached = cache.get_many(keys)
    except Exception:  # the cache is an optimisation: an outage costs speed, never the page
        logger.warning("memory cache unavailable", exc_info=True)
        cached = {}
    values, fresh = [], {}
    for fact, key in zip(wanted, keys, strict=True):
        if key in cached:
            values.append(fact.load(cached[key]))
            continue
        value = fact.compute(fs)
        fresh[key] = fact.dump(value)
        values.append(value)
    if fresh:
        try:
            cache.set_many(fresh, CACHE_SECONDS)
        except Exception:
            logger.warning("memory cache unavailable", exc_info=True)
    return values


def verdict_now(fs: FileSystem) -> list[Violation]:
    """The verdict from the stored rows, uncached: two queries whatever the number of files."""
    tokens = dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "tokens"))
    contents = dict(MemoryFile.objects.filter(filesystem=fs, path__in=SPECIAL).values_list("path", "content"))
    return verify({path: contents.get(path, "") for path in tokens}, fs.budgets, tokens=tokens)


def _totals_now(fs: FileSystem) -> dict:
    row = MemoryFile.objects.filter(filesystem=fs).aggregate(
        files=Count("pk"), all_exact=Count("pk", filter=Q(tokens_exact=False))
    )
    return {"files": row["files"], "exact": row["all_exact"] == 0}


# verdict_now is looked up when called, so a test can wrap it.
VERDICT = CachedFact("verdict", lambda fs: verdict_now(fs), dump=lambda vs: [v.as_dict() for v in vs],  # noqa: PLW0108
                     load=lambda rows: [Violation(**row) for row in rows])
TOTALS = CachedFact("totals", _totals_now)


def status(fs: FileSystem) -> list[Violation]:
    """The verifier's verdict on the live file system."""
    return facts(fs, VERDICT)[0]


def totals(fs: FileSystem) -> dict:
    return facts(fs, TOTALS)[0]


def pinned(fs: FileSystem) -> list[MemoryFile]:
    return list(MemoryFile.objects.filter(filesystem=fs, path__in=SPECIAL).defer("content").order_by("path"))


@dataclass(frozen=True)
class Folder:
    path: str  # e.g. "people/"
    name: str  # e.g. "people"
    files: int


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]  # names and queries may hold spaces


def subfolders_fact(folder: str) -> CachedFact:
    """The folders directly inside `folder`, each with the number of files below it."""
    return CachedFact(f"folders:{_digest(folder)}", lambda fs: _subfolders_now(fs, folder),
                      dump=lambda folders: [(f.path, f.name, f.files) for f in folders],
                      load=lambda rows: [Folder(*row) for row in rows])


def _subfolders_now(fs: FileSystem, folder: str) -> list[Folder]:
    counts: dict[str, int] = defaultdict(int)
    rows = (MemoryFile.objects.filter(filesystem=fs, folder__startswith=folder).exclude(folder=folder)
            .values("folder").annotate(n=Count("pk")).order_by())
    for row in rows:
        child = row["folder"][len(folder):].split("/", 1)[0]
        counts[child] += row["n"]
    return [Folder(f"{folder}{name}/", name, n) for name, n in sorted(counts.items())]


def files_in(fs: FileSystem, folder: str) -> QuerySet[MemoryFile]:
    queryset = MemoryFile.objects.filter(filesystem=fs, folder=folder).defer("content").order_by("path")
    return queryset.exclude(path__in=SPECIAL) if folder == "" else queryset


def files_in_count_fact(folder: str) -> CachedFact:
    """How many files `files_in` lists, kept per revision: the tree's pages need no COUNT."""
    return CachedFact(f"files-in:{_digest(folder)}", lambda fs: files_in(fs, folder).count())


# The characters that mean something in a PostgreSQL regular expression (ARE): each is escaped,
# so the query is matched as the text it is ("50%", "a.b", "(draft)").
_REGEX_SPECIAL = frozenset("\\^$.[]|()?*+{}")


def _as_literal_regex(text: str) -> str:
    return "".join("\\" + ch if ch in _REGEX_SPECIAL else ch for ch in text)


def _contains_any_case(field: str, query: str) -> Q:
    """`field` contains `query`, in any case. On PostgreSQL a case-blind regular expression of the
    query as a literal (`~*`), which the trigram indexes of memory/migrations/0006 serve and which
    re-checks a long file several times faster than upper-casing it; SQLite's LIKE is case-blind."""
    if connection.vendor != "postgresql":
        return Q(**{f"{field}__icontains": query})
    return Q(**{f"{field}__iregex": _as_literal_regex(query)})


def search_count_fact(query: str, cap: int) -> CachedFact:
    """How many files `search` finds, counting at most `cap`; kept per revision, so paging
    through the results (or typing the same words again) runs the search once per page."""
    return CachedFact(f"search:{_digest(query)}:{cap}", lambda fs: capped_count(search(fs, query), cap))


def search(fs: FileSystem, query: str) -> QuerySet[MemoryFile]:
    """Files whose path or text contains `query`, in any case, by path."""
    if "\x00" in query:  # no file holds a NUL (PostgreSQL text can't), and it can't be sent as a parameter
        return MemoryFile.objects.none()
    return (MemoryFile.objects.filter(filesystem=fs)
            .filter(_contains_any_case("path", query) | _contains_any_case("content", query))
            .defer("content").order_by("path"))


# How many moves back a file's history is followed (each hop is one indexed query).
MAX_HISTORY_MOVES = 20


def file_lineage(fs: FileSystem, path: str) -> list[tuple[str, int | None, int | None]]:
    """The paths the file now at `path` had, newest first, each with the revisions it was there
    (from, up to and excluding): [("people/jane.md", 12, None), ("jane.md", None, 12)] for a file
    moved from jane.md in revision 12. The history follows a file across moves, and no further
    back at a path than the move that brought it there (an older file of the same name is another
    file)."""
    lineage: list[tuple[str, int | None, int | None]] = []
    current, upto = path, None
    seen = set()
    for _ in range(MAX_HISTORY_MOVES + 1):
        moves = FileChange.objects.filter(filesystem=fs, path=current, op=FileChange.Op.MOVE)
        if upto is not None:
            moves = moves.filter(revision_id__lt=upto)
        move = moves.order_by("-revision_id", "-pk").values_list("old_path", "revision_id").first()
        if move is None or (move[0], move[1]) in seen:
            lineage.append((current, None, upto))
            break
        seen.add(move)
        lineage.append((current, move[1], upto))
        current, upto = move
    return lineage


def file_history(fs: FileSystem, path: str) -> QuerySet[FileChange]:
    """Every change to the file now at `path`, newest first, across its moves (file_lineage)."""
    where = Q()
    for at, since, upto in file_lineage(fs, path):
        here = Q(path=at) | Q(old_path=at)
        if since is not None:
            here &= Q(revision_id__gte=since)
        if upto is not None:
            here &= Q(revision_id__lt=upto)
        where |= here
    return (FileChange.objects.filter(filesystem=fs).filter(where)
            .select_related("revision", "revision__author").order_by("-revision_id", "-pk"))


def file_history_count_fact(path: str) -> CachedFact:
    """How many changes `file_history` lists, kept per revision."""
    return CachedFact(f"history:{_digest(path)}", lambda fs: file_history(fs, path).count())


def revisions(fs: FileSystem) -> QuerySet[Revision]:
    return Revision.objects.filter(filesystem=fs).select_related("author").order_by("-created_at", "-pk")


# How many revisions the file system has, kept per revision (a new one is a new head).
REVISION_COUNT = CachedFact("revisions", lambda fs: revisions(fs).count())


def change_counts(revision_ids: list[int]) -> dict[int, int]:
    """How many files each revision changed: one grouped query over the foreign key's index for
    a page of revisions, instead of joining every change of every revision to count them."""
    rows = (FileChange.objects.filter(revision_id__in=revision_ids).values("revision_id")
            .annotate(n=Count("pk")).order_by().values_list("revision_id", "n"))
    return dict(rows)


def revision_get(fs: FileSystem, revision_id) -> Revision:
    return permissions.get_visible_or_404(
        Revision.objects.filter(filesystem=fs).select_related("author", "reverts"), pk=revision_id
    )


def change_get(fs: FileSystem, change_id) -> FileChange:
    return permissions.get_visible_or_404(FileChange.objects.filter(filesystem=fs).select_related("revision"),
                                          pk=change_id)


def files_content(fs: FileSystem) -> dict[str, str]:
    """Every file's text (path -> content): the draft the memory agent starts from."""
    return dict(MemoryFile.objects.filter(filesystem=fs).values_list("path", "content"))


# --- The editor's live check ---------------------------------------------------------------------

@dataclass(frozen=True)
class EditCheck:
    """What saving `content` at `path` now would meet: its token count against its budget and
    the verifier's verdict on the file system with the text in place (nothing is written)."""

    path: str  # "" when the path given cannot name a memory file
    size: int  # bytes
    tokens: int | None  # None: not counted (the text is over MAX_FILE_BYTES)
    exact: bool
    budget: int
    violations: list[Violation]
    refused: str  # why a write would refuse the text before the verifier sees it ("" when it would not)
    # Links in the text to files that do not exist. In index.md and master.md the verifier refuses
    # them (they are among `violations`); elsewhere it does not, and the editor says why.
    missing_links: tuple[str, ...] = ()
    # For index.md and master.md: both files' tokens together, against the budget they share.
    shared_tokens: int | None = None

    @property
    def shared_budget(self) -> bool:
        """index.md and master.md share one always-loaded budget."""
        return self.path in SPECIAL

    @property
    def over_budget(self) -> bool:
        if self.shared_tokens is not None:
            return self.shared_tokens > self.budget
        return self.tokens is not None and self.tokens > self.budget


def edit_check(fs: FileSystem, *, path: str, content: str, user=None, add_to_index: bool = False) -> EditCheck:
    """The editor's preview check, counted with memory's token counter (the model's counter when a
    key is configured, the documented estimate otherwise) and verified like a real write."""
    size = len(content.encode("utf-8"))
    try:
        clean = check_path(path) if path else ""
    except MemoryWriteError:
        clean = ""
    budget = fs.always_loaded_token_budget if clean in SPECIAL else fs.file_token_budget
    try:
        check_content(content)
    except MemoryWriteError as exc:
        return EditCheck(clean, size, None, False, budget, [], exc.message)
    counter = TokenCounter(user)
    tokens, exact = counter(content)
    if not clean:
        return EditCheck("", size, tokens, exact, budget, [], "")
    draft = MemoryDraft.load(fs, contents={clean}, counter=counter)
    try:
        created = clean not in draft.files
        draft.apply(Change("write", clean, content=content))
        if created and add_to_index and clean not in SPECIAL and INDEX in draft.files:
            index = draft.content(INDEX)
            draft.apply(Change("update", INDEX, content=links.append_line(index, links.index_line(clean, ""))))
    except MemoryWriteError as exc:
        return EditCheck(clean, size, tokens, exact, budget, [], exc.message)
    missing = tuple(sorted(linked_paths(content) - draft.files.keys()))
    violations = draft.violations()  # counts every file the draft changed
    shared = None
    if clean in SPECIAL:
        counted = draft.tokens()
        shared = sum(counted.get(special, 0) for special in SPECIAL)
    return EditCheck(clean, size, tokens, exact, budget, violations, "", missing, shared)


def last_change(fs: FileSystem, path: str) -> FileChange | None:
    """The newest change that left a file at `path`, with its revision and author."""
    return (FileChange.objects.filter(filesystem=fs, path=path).select_related("revision", "revision__author")
            .order_by("-pk").first())
def filesystem_export(fs: FileSystem) -> bytes:
    """The zip of `fs` (memory.portable): its markdown files and a manifest of its revisions."""
    return portable.archive_build(fs)
