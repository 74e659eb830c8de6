"""Who wrote each line of a memory file: a deterministic blame over the file's revisions.

Only the user's own words may stand as their permission (the validator reads this), so every
line has an author kind:

- "team": any line of a team file system (it describes the team; it authorizes no one);
- "user": the revision that introduced the line was made by the file system's owner (in the
  browser or through the API), or by hydration from items that were ALL the owner's own words
  (their sent mail, their Slack messages, their meeting notes: `Revision.words_of == "owner"`);
- "others": everything else, failing closed: hydration from anyone else's words or from a mix,
  the learner, the system, another person, and any line whose history is not complete.

The walk reads every change of the file's lineage (moves followed), oldest first: a line equal
(difflib) to one of the text before keeps that line's revision, and so does a line only moved
within the file; the others take the change's revision. A revert or a restore gives the lines
it puts back to the revisions that wrote them then, so undoing an edit also undoes its
authorship. index.md and master.md, read for every validation, are cached change by change
(`blame_special`).
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from typing import NamedTuple

from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone

from .models import RESTORE_SOURCE, VIA_API, VIA_BROWSER, FileChange, FileSystem, MemoryFile, Revision

USER = "user"
OTHERS = "others"
TEAM = "team"
AUTHOR_KINDS = (USER, OTHERS, TEAM)
# The source_kind hydration gives its revisions (source_id: the run).
HYDRATION_SOURCE = "hydration_run"
CACHE_SECONDS = 24 * 3600
# A file renamed more times than this keeps the history found so far (lines beyond it: "others").
MAX_MOVES = 20

Attributed = list[tuple[str, int | None]]  # (line, id of the revision that wrote it)
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BlamedLine:
    number: int
    text: str
    revision: Revision | None
    author_kind: str  # USER, OTHERS or TEAM
    author_label: str  # e.g. "you, edited in the browser on 2026-11-30"

    @property
    def revision_id(self) -> int | None:
        return self.revision.pk if self.revision is not None else None

    @property
    def hydration_run_id(self) -> int | None:
        """The hydration run that wrote the line, for a link to the items behind it."""
        rev = self.revision
        if rev is not None and rev.source_kind == HYDRATION_SOURCE and rev.source_id.isdigit():
            return int(rev.source_id)
        return None


class _Row(NamedTuple):
    pk: int
    revision_id: int
    op: str
    path: str
    old_path: str
    after: str
    reverts_id: int | None
    source_kind: str
    source_id: str


_ROW_FIELDS = ("pk", "revision_id", "op", "path", "old_path", "after", "revision__reverts_id",
               "revision__source_kind", "revision__source_id")


def _rows(queryset) -> list[_Row]:
    return [_Row(*values) for values in queryset.order_by("revision_id", "pk").values_list(*_ROW_FIELDS)]


def _carry(text: str, revision_id: int, sources: list[Attributed]) -> Attributed:
    """The lines of `text`, each keeping the revision of an equal line in the first source that
    has it (in order), else written by `revision_id`."""
    new = text.splitlines()
    found: list[int | None] = [None] * len(new)
    filled = [False] * len(new)
    for source in sources:
        used = [False] * len(source)
        matcher = difflib.SequenceMatcher(None, [line for line, _ in source], new, autojunk=False)
        for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
            if tag != "equal":
                continue
            for k in range(i2 - i1):
                if not filled[j1 + k]:
                    found[j1 + k], filled[j1 + k], used[i1 + k] = source[i1 + k][1], True, True
        # A line moved elsewhere is not new words: sorting a file does not make its lines yours.
        moved: dict[str, list[int | None]] = {}
        for (line, rid), taken in zip(source, used, strict=True):
            if not taken:
                moved.setdefault(line, []).append(rid)
        for j, line in enumerate(new):
            if not filled[j] and moved.get(line):
                found[j], filled[j] = moved[line].pop(0), True
    return [(line, found[j] if filled[j] else revision_id) for j, line in enumerate(new)]


def walk(rows: list[_Row], start: dict[str, Attributed] | None = None) -> dict[str, Attributed]:
    """path -> its attributed lines, for every path alive after `rows` (oldest first), from
    the files as `start` has them (none: from the beginning of the history)."""
    files: dict[str, Attributed] = dict(start or {})
    before_change: dict[int, Attributed] = {}  # change id -> its file's lines just before it
    before_revision: dict[tuple[int, str], Attributed] = {}  # (revision id, path) -> the same
    for row in rows:
        if row.op == FileChange.Op.MOVE:
            current = files.pop(row.old_path, [])
            before_change[row.pk] = current
            before_revision.setdefault((row.revision_id, row.old_path), current)
            files[row.path] = _carry(row.after, row.revision_id, [current])
            continue
        current = files.get(row.path, [])
        before_change[row.pk] = current
        before_revision.setdefault((row.revision_id, row.path), current)
        if row.op == FileChange.Op.DELETE:
            files.pop(row.path, None)
            continue
        sources = [current]
        restored = None
        if row.reverts_id is not None:
            restored = before_revision.get((row.reverts_id, row.path))
        elif row.source_kind == RESTORE_SOURCE and row.source_id.isdigit():
            restored = before_change.get(int(row.source_id))
        if restored is not None:
            sources.insert(0, restored)
        files[row.path] = _carry(row.after, row.revision_id, sources)
    return files


# --- Who a revision's lines belong to --------------------------------------------------------

def author_kind(revision: Revision | None, fs: FileSystem) -> str:
    if fs.kind == FileSystem.Kind.TEAM:
        return TEAM
    if revision is None:
        return OTHERS
    if revision.author_kind == Revision.AuthorKind.PERSON and revision.author_id == fs.owner_id:
        return USER
    # Hydration counts as the user's only when every item behind it was theirs: a mix fails closed.
    if revision.author_kind == Revision.AuthorKind.MEMORY_AGENT and revision.words_of == Revision.WordsOf.OWNER:
        return USER
    return OTHERS


def author_label(revision: Revision | None, fs: FileSystem) -> str:
    if revision is None:
        return "unknown: no complete history for this line"
    day = f"on {timezone.localtime(revision.created_at):%Y-%m-%d}"
    if revision.author_kind == Revision.AuthorKind.PERSON:
        if fs.kind == FileSystem.Kind.USER and revision.author_id == fs.owner_id:
            who = "you"
        else:
            who = revision.author.email if revision.author is not None else "a deleted user"
        if revision.reverts_id:
            what = f"reverting revision {revision.reverts_id}"
        elif revision.source_kind == RESTORE_SOURCE:
            what = "restoring an earlier text"
        else:
            what = "edited" + {VIA_BROWSER: " in the browser", VIA_API: " through the API"}.get(revision.source_kind, "")
        return f"{who}, {what} {day}"
    if revision.author_kind == Revision.AuthorKind.MEMORY_AGENT:
        run = f" run {revision.source_id}" if revision.source_kind == HYDRATION_SOURCE and revision.source_id else ""
        if revision.words_of == Revision.WordsOf.OWNER:
            words = "your own " + (revision.words_from or "words")
        else:
            words = revision.words_from or "other people's words"
        return f"hydration{run} from {words} {day}"
    if revision.author_kind == Revision.AuthorKind.LEARNER:
        return f"the learner {day}"
    return f"Lindy (system) {day}"


def _lines(fs: FileSystem, content: str, attributed: Attributed | None, revisions: dict[int, Revision]) -> list[BlamedLine]:
    current = content.splitlines()
    if attributed is None or [line for line, _ in attributed] != current:
        # The history does not end in the live text: attribute nothing rather than guess.
        attributed = [(line, None) for line in current]
    result = []
    # A revision wrote many lines: its author and label are worked out once (a label is a date in
    # the local time zone, which costs more than the rest of the line).
    authors: dict[int | None, tuple[str, str]] = {}
    for number, (text, revision_id) in enumerate(attributed, start=1):
        revision = revisions.get(revision_id) if revision_id is not None else None
        key = revision.pk if revision is not None else None
        author = authors.get(key)
        if author is None:
            author = authors[key] = (author_kind(revision, fs), author_label(revision, fs))
        result.append(BlamedLine(number, text, revision, *author))
    return result


def _revisions(ids: set[int]) -> dict[int, Revision]:
    if not ids:
        return {}
    return {r.pk: r for r in Revision.objects.filter(pk__in=ids).select_related("author")}


# --- Entry points ----------------------------------------------------------------------------

def blame_file(fs: FileSystem, file: MemoryFile) -> list[BlamedLine]:
    """Every line of `file` with its author: one query per rename in its past, plus one."""
    paths = {file.path}
    rows: list[_Row] = []
    for _ in range(MAX_MOVES + 1):
        rows = _rows(FileChange.objects.filter(filesystem=fs).filter(Q(path__in=paths) | Q(old_path__in=paths)))
        earlier = {r.old_path for r in rows if r.op == FileChange.Op.MOVE and r.path in paths} - paths
        if not earlier:
            break
        paths |= earlier
    attributed = walk(rows).get(file.path)
    ids = {rid for _, rid in attributed or [] if rid is not None}
    return _lines(fs, file.content, attributed, _revisions(ids))


def _cache_key(fs: FileSystem, path: str) -> str:
    # The file system's creation time is in the key: a rebuilt database never meets old entries.
    return f"memory:blame:{fs.pk}:{fs.created_at.timestamp()}:{path}"


def _cached(keys: list[str]) -> dict:
    try:
        return cache.get_many(keys)
    except Exception:  # the cache is an optimisation: an outage costs speed, never the answer
        logger.warning("memory blame cache unavailable", exc_info=True)
        return {}


def _store(entries: dict) -> None:
    try:
        cache.set_many(entries, CACHE_SECONDS)
    except Exception:
        logger.warning("memory blame cache unavailable", exc_info=True)


def _special_rows(wanted: dict[tuple[int, str], int]) -> dict[tuple[int, str], list[_Row]]:
    """(fs id, path) -> its changes after change `wanted[...]` (0: all), in one query."""
    rows: dict[tuple[int, str], list[_Row]] = {key: [] for key in wanted}
    if not wanted:
        return rows
    condition = Q()
    for (fs_id, path), after in wanted.items():
        condition |= Q(filesystem_id=fs_id, path=path, pk__gt=after)
    for fs_id, *values in (FileChange.objects.filter(condition).order_by("revision_id", "pk")
                           .values_list("filesystem_id", *_ROW_FIELDS)):
        row = _Row(*values)
        rows[(fs_id, row.path)].append(row)
    return rows


def _attribute(keys, rows: dict, starts: dict) -> dict[tuple[int, str], Attributed | None]:
    result: dict[tuple[int, str], Attributed | None] = {}
    for key in keys:
        start = starts.get(key)
        lines: Attributed | None = [(text, rid) for text, rid in start["lines"]] if start else None
        if rows[key]:
            lines = walk(rows[key], {key[1]: lines} if lines is not None else None).get(key[1])
        result[key] = lines
    return result


def _ends_in(lines: Attributed | None, content: str) -> bool:
    return lines is not None and [text for text, _ in lines] == content.splitlines()


def blame_special(contents: dict[tuple[int, str], str], filesystems: list[FileSystem]) -> dict[tuple[int, str], list[BlamedLine]]:
    """index.md and master.md of several file systems ((fs id, path) -> content), blamed in
    two queries whatever their number and history (three when one needs its whole history).

    These files are never moved, so their blame grows change by change: the cache keeps each
    file's attribution as of its last change, and only the changes after it are read and
    walked. A revert or a restore since then needs older states, and a cached state that does
    not end in the live text is not trusted: those files are walked whole."""
    if not contents:
        return {}
    fs_by_id = {fs.pk: fs for fs in filesystems}
    keys = {key: _cache_key(fs_by_id[key[0]], key[1]) for key in contents}
    cached = _cached(list(keys.values()))
    starts = {key: cached[keys[key]] for key in contents if keys[key] in cached}
    rows = _special_rows({key: starts[key]["change"] if key in starts else 0 for key in contents})
    whole = {key for key in starts
             if any(r.reverts_id is not None or r.source_kind == RESTORE_SOURCE for r in rows[key])}
    attributed = _attribute([k for k in contents if k not in whole], rows, starts)
    whole |= {key for key in starts if key not in whole and not _ends_in(attributed[key], contents[key])}
    if whole:
        rows.update(_special_rows({key: 0 for key in whole}))
        attributed.update(_attribute(whole, rows, {}))
    fresh = {keys[key]: {"change": rows[key][-1].pk, "lines": [list(line) for line in attributed[key] or []]}
             for key in contents if rows[key] and _ends_in(attributed[key], contents[key])}
    if fresh:
        _store(fresh)
    ids = {rid for lines in attributed.values() for _, rid in lines or [] if rid is not None}
    revisions = _revisions(ids)
    return {key: _lines(fs_by_id[key[0]], content, attributed[key], revisions) for key, content in contents.items()}
