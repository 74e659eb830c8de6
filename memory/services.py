"""Every write to memory. All of them go through `changes_apply`, which verifies the file
system as it would be after the change and writes it as ONE revision, or refuses it.

    changes_apply(filesystem=fs, changes=[Change("update", "people/jane.md", content=..., base_version=3)],
                  author_kind="memory_agent", message="Hydration of Nov 29", source_kind="hydration_run",
                  source_id="42")

Callers outside this app (hydration, the learner, the memory agent) use the same function.
`changes_apply` replays the batch on a `memory.draft.MemoryDraft` of the locked file system; a writer
that built its own MemoryDraft (the memory agent) passes `changes=draft.changes, counter=draft.counter`
so the texts its draft counted are not counted again.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import CharField, F, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from lindy import bulk

from . import links
from .draft import (
    MAX_FILE_BYTES,
    OPS,
    AlreadyExists,
    Change,
    DraftFile,
    FileNotFound,
    InvalidChange,
    MemoryDraft,
    MemoryWriteError,
    NothingChanged,
    StaleVersion,
    TokenCounter,
    VerificationFailed,
    check_path,
    written_contents,
)
from .models import IMPORT_SOURCE, RESTORE_SOURCE, FileChange, FileSystem, MemoryFile, Revision
from .paths import INDEX, SPECIAL, PathError, clean_path, folder_of
from .selectors import forget_head
from .verifier import Budgets, Violation, linked_paths, verify

MAX_CHANGES = 10_000
MAX_MESSAGE = 500
MAX_DESCRIPTION = 300
# Budgets are stored as 32-bit integers; no model context comes near this many tokens.
MAX_BUDGET = 10_000_000

AuthorKind = Revision.AuthorKind


def draft_verify(*, filesystem: FileSystem, files: dict[str, str], user=None) -> list[Violation]:
    """The verifier's verdict on a whole draft of `filesystem` (path -> content), counted the
    way writes are counted, against the file system's budgets. For a writer holding plain
    text; one holding a `memory.draft.MemoryDraft` asks `draft.violations()`."""
    count = TokenCounter(user)
    return verify(files, filesystem.budgets, count=lambda text: count(text)[0])


def _touched(changes: list[Change]) -> set[str]:
    touched = set()
    for change in changes:
        for raw in (change.path, change.new_path):
            if isinstance(raw, str):
                try:
                    touched.add(clean_path(raw))
                except PathError:
                    pass
    return touched


def changes_apply(
    *,
    filesystem: FileSystem,
    changes: list[Change],
    author_kind: str,
    author=None,
    message: str = "",
    source_kind: str = "",
    source_id: str = "",
    reverts: Revision | None = None,
    counter: TokenCounter | None = None,
    words_of: str = "",
    words_from: str = "",
) -> Revision:
    """Apply `changes` in order on a `MemoryDraft` of the locked file system and write it as one
    revision, or raise MemoryWriteError and write nothing (`NothingChanged` when the files
    already are as the changes would leave them).

    `counter` is the TokenCounter of the writer's own draft (the memory agent's): texts it
    counted already are not counted again.

    `words_of` / `words_from`: for a writer summarizing other people's text (hydration), whose
    words were behind the batch (memory.blame decides from it who authored each line)."""
    if author_kind not in AuthorKind.values:
        raise InvalidChange(f"Unknown author kind {author_kind!r}.")
    if words_of and words_of not in Revision.WordsOf.values:
        raise InvalidChange(f"Unknown words_of {words_of!r}.")
    if not changes:
        raise NothingChanged("Nothing to change.")
    if len(changes) > MAX_CHANGES:
        raise InvalidChange(f"At most {MAX_CHANGES} changes fit in one revision.")
    counter = counter if counter is not None else TokenCounter(author)
    # Count before taking the lock: with a model key this calls the model's counter, which
    # must not hold the file system's row lock while it waits on the network. Only the texts
    # the batch leaves in files are counted, each once.
    counter.prime(written_contents(changes))

    with transaction.atomic():
        fs = FileSystem.objects.select_for_update().get(pk=filesystem.pk)
        draft = MemoryDraft.load(fs, contents=_touched(changes), counter=counter)
        for change in changes:
            draft.apply(change)
        if not draft.records:
            raise NothingChanged("Nothing changed: the files already have that content.")
        violations = draft.violations()
        if violations:
            raise VerificationFailed(violations)
        revision = Revision.objects.create(
            filesystem=fs, author_kind=author_kind, author=author, message=(message or _describe(draft))[:MAX_MESSAGE],
            source_kind=source_kind[:50], source_id=str(source_id)[:100], reverts=reverts,
            words_of=words_of, words_from=words_from[:300],
        )
        _write(fs, draft, revision)
    forget_head(filesystem)  # the caller's instance read its facts at the old head
    return revision


def _describe(draft: MemoryDraft) -> str:
    parts = [f"{r.get_op_display().lower()} {r.path}" for r in draft.records[:3]]
    more = f" and {len(draft.records) - 3} more" if len(draft.records) > 3 else ""
    return ", ".join(parts).capitalize() + more


def _write(fs: FileSystem, draft: MemoryDraft, revision: Revision) -> None:
    final = draft.files
    # The draft was loaded under the file system's lock (changes_apply): its rows are the live ones.
    existing = (draft.loaded if draft.loaded is not None
                else dict(MemoryFile.objects.filter(filesystem=fs).values_list("pk", "path")))
    kept_ids = {live.id for live in final.values() if live.id is not None}
    gone = [pk for pk in existing if pk not in kept_ids]
    if gone:
        MemoryFile.objects.filter(pk__in=gone).delete()
    changed_paths = draft.changed_paths()
    to_create, to_update = [], []
    for path, live in final.items():
        if path not in changed_paths:
            continue
        if live.id is None:
            to_create.append(_row(fs, path, live))
        else:
            to_update.append(_row(fs, path, live, pk=live.id))
    # Moves can swap paths inside one batch: park moved rows on a path no file can have
    # (a leading "~" is invalid) so the unique constraint holds while they are written.
    moved = [row.pk for row in to_update if existing.get(row.pk) != row.path]
    if moved:
        MemoryFile.objects.filter(pk__in=moved).update(path=Concat(Value("~moving/"), Cast(F("pk"), output_field=CharField())))
    if to_update:
        now = timezone.now()  # bulk_update does not stamp auto_now fields
        if bulk.supported():  # one UPDATE from arrays, not a CASE per field and row
            bulk.rows_update(MemoryFile, [row.pk for row in to_update],
                             {name: [getattr(row, name) for row in to_update] for name in _UPDATED},
                             same={"updated_at": now})
        else:
            for row in to_update:
                row.updated_at = now
            MemoryFile.objects.bulk_update(to_update, [*_UPDATED, "updated_at"])
    MemoryFile.objects.bulk_create(to_create, batch_size=500)
    for record in draft.records:
        record.revision = revision
        record.filesystem = fs
    FileChange.objects.bulk_create(draft.records, batch_size=500)


_UPDATED = ["path", "folder", "content", "version", "size", "tokens", "tokens_exact"]


def _row(fs: FileSystem, path: str, live: DraftFile, pk: int | None = None) -> MemoryFile:
    content = live.content or ""
    return MemoryFile(
        pk=pk, filesystem=fs, path=path, folder=folder_of(path), content=content, version=live.version,
        size=len(content.encode("utf-8")), tokens=live.tokens or 0, tokens_exact=live.exact,
    )


# The operations people use, each one revision.

def file_write(
    *, filesystem: FileSystem, path: str, content: str, base_version: int | None, author_kind: str,
    author=None, message: str = "", index_description: str | None = None, create_only: bool = False,
    source_kind: str = "", source_id: str = "",
) -> Revision:
    """Create or update one file. Creating it with `index_description` adds its index line
    in the same revision, so the new file is not a dead memory."""
    path = check_path(path)
    if index_description is not None and len(index_description) > MAX_DESCRIPTION:
        raise InvalidChange(f"The index description may be at most {MAX_DESCRIPTION} characters.")
    exists = MemoryFile.objects.filter(filesystem=filesystem, path=path).exists()
    changes = [Change("update" if exists else "create", path, content=content, base_version=base_version)]
    if exists and create_only:
        raise StaleVersion(f"{path} already exists: open it and send the version you edited (base_version) to update it.")
    if exists and base_version is None and author_kind == AuthorKind.PERSON:
        raise StaleVersion(f"{path} already exists: send the version you edited (base_version) to update it.")
    if not exists and index_description is not None and path not in SPECIAL:
        index = _content(filesystem, INDEX)
        changes.append(Change("update", INDEX, content=links.append_line(index, links.index_line(path, index_description))))
    return changes_apply(filesystem=filesystem, changes=changes, author_kind=author_kind, author=author,
                         message=message, source_kind=source_kind, source_id=source_id)


def _content(fs: FileSystem, path: str) -> str:
    return MemoryFile.objects.filter(filesystem=fs, path=path).values_list("content", flat=True).first() or ""


def file_move(
    *, filesystem: FileSystem, path: str, new_path: str, base_version: int | None, author_kind: str,
    author=None, message: str = "", update_links: bool = True,
) -> Revision:
    """Rename or move a file; with `update_links`, index and master links follow it."""
    path, new_path = check_path(path), check_path(new_path, "new path")
    changes = [Change("move", path, new_path=new_path, base_version=base_version)]
    if update_links:
        changes += MemoryDraft.load(filesystem, contents=()).link_fixes_after_move(path, new_path)
    return changes_apply(filesystem=filesystem, changes=changes, author_kind=author_kind, author=author,
                         message=message or f"Move {path} to {new_path}")


def file_delete(
    *, filesystem: FileSystem, path: str, base_version: int | None, author_kind: str, author=None,
    message: str = "", update_links: bool = True,
) -> Revision:
    """Delete a file; with `update_links`, its index lines go and master links become plain text."""
    path = check_path(path)
    changes = [Change("delete", path, base_version=base_version)]
    if update_links:
        changes += MemoryDraft.load(filesystem, contents=()).link_fixes_after_delete(path)
    return changes_apply(filesystem=filesystem, changes=changes, author_kind=author_kind, author=author,
                         message=message or f"Delete {path}")


def revision_revert(*, revision: Revision, author_kind: str, author=None, message: str = "") -> Revision:
    """Undo a whole revision as a new revision. Refused (409) if a file it touched has changed
    since, so a revert never silently discards a later edit."""
    inverse = []
    for record in reversed(list(revision.changes.all())):
        if record.op == FileChange.Op.CREATE:
            inverse.append(Change("delete", record.path, base_version=record.after_version))
        elif record.op == FileChange.Op.UPDATE:
            inverse.append(Change("update", record.path, content=record.before, base_version=record.after_version))
        elif record.op == FileChange.Op.MOVE:
            inverse.append(Change("move", record.path, new_path=record.old_path, base_version=record.after_version))
        elif record.op == FileChange.Op.DELETE:
            inverse.append(Change("create", record.path, content=record.before))
    try:
        return changes_apply(
            filesystem=revision.filesystem, changes=inverse, author_kind=author_kind, author=author,
            message=message or f"Revert revision {revision.pk}: {revision.message}", reverts=revision,
        )
    except (StaleVersion, FileNotFound, AlreadyExists) as exc:
        raise StaleVersion(
            f"Revision {revision.pk} cannot be reverted cleanly because its files changed afterwards: {exc.message} "
            "Revert the later revisions first, or edit the file by hand."
        ) from None


def file_restore(*, filesystem: FileSystem, change: FileChange, author_kind: str, author=None) -> Revision:
    """Put a file back to its text from just before `change` (a new revision; the file's
    later history stays)."""
    if change.filesystem_id != filesystem.pk:
        raise FileNotFound("No such change in this file system.")
    if change.op == FileChange.Op.CREATE:
        raise InvalidChange("Before this change the file did not exist: delete the file instead.")
    if change.op == FileChange.Op.MOVE:
        raise InvalidChange("A move does not change the text: revert its revision to move the file back.")
    path = change.path
    current = MemoryFile.objects.filter(filesystem=filesystem, path=path).first()
    if current is None:
        # A deleted file comes back with its index line, unless index or master still link it.
        changes = [Change("create", path, content=change.before)]
        specials = dict(MemoryFile.objects.filter(filesystem=filesystem, path__in=SPECIAL)
                        .values_list("path", "content"))
        if not any(path in linked_paths(text) for text in specials.values()):
            index = specials.get(INDEX, "")
            changes.append(Change("update", INDEX, content=links.append_line(
                index, links.index_line(path, f"restored from revision {change.revision_id}"))))
        return changes_apply(filesystem=filesystem, changes=changes, author_kind=author_kind, author=author,
                             message=f"Restore {path} as of before revision {change.revision_id}",
                             source_kind=RESTORE_SOURCE, source_id=str(change.pk))
    return changes_apply(
        filesystem=filesystem,
        changes=[Change("update", change.path, content=change.before, base_version=current.version)],
        author_kind=author_kind, author=author,
        message=f"Restore {change.path} as of before revision {change.revision_id}",
        source_kind=RESTORE_SOURCE, source_id=str(change.pk),
    )


def change_revert(*, filesystem: FileSystem, change: FileChange, author_kind: str, author=None) -> Revision:
    """Undo one file's change, and only that file's (a revision's other files stay as they are):
    an edit's text comes back, a created file goes (with its index line), a deleted file comes
    back (with an index line unless index or master still link it), a moved file moves back (its
    links follow). Refused (409) when the file changed after `change`, so nobody's later edit is
    undone unseen; "restore" puts an old text back over later edits knowingly. The whole
    revision is reverted by `revision_revert`."""
    if change.filesystem_id != filesystem.pk:
        raise FileNotFound("No such change in this file system.")
    label = f"the {change.get_op_display().lower()} of {change.path} in revision {change.revision_id}"
    live = MemoryFile.objects.filter(filesystem=filesystem, path=change.path).values_list("version", flat=True).first()
    later = (f"{change.path} changed after revision {change.revision_id} (it is now at version {live}): "
             "reverting this change alone would undo that later edit too. Use \"Restore the text from before "
             "this change\" to put the old text back anyway, or edit the file by hand.")
    try:
        if change.op == FileChange.Op.UPDATE:
            if live != change.after_version:
                raise StaleVersion(later if live is not None else
                                   f"{change.path} no longer exists (moved or deleted since): nothing to revert.")
            return file_restore(filesystem=filesystem, change=change, author_kind=author_kind, author=author)
        if change.op == FileChange.Op.DELETE:
            if live is not None:
                raise AlreadyExists(f"A file {change.path} exists again: open its history to undo that instead.")
            return file_restore(filesystem=filesystem, change=change, author_kind=author_kind, author=author)
        if change.op == FileChange.Op.CREATE:
            if live != change.after_version:
                raise StaleVersion(later if live is not None else
                                   f"{change.path} no longer exists (moved or deleted since): nothing to revert.")
            return file_delete(filesystem=filesystem, path=change.path, base_version=change.after_version,
                               author_kind=author_kind, author=author, message=f"Revert {label}")
        # A move: back to where it was, its links following it.
        if live != change.after_version:
            raise StaleVersion(later if live is not None else
                               f"{change.path} is no longer there (moved or deleted since): nothing to move back.")
        return file_move(filesystem=filesystem, path=change.path, new_path=change.old_path,
                         base_version=change.after_version, author_kind=author_kind, author=author,
                         message=f"Revert {label} (back to {change.old_path})")
    except AlreadyExists as exc:
        raise AlreadyExists(f"Cannot revert {label}: {exc.message}") from None


def budgets_update(*, filesystem: FileSystem, file_tokens: int, always_loaded_tokens: int) -> FileSystem:
    """New budgets, refused if the live files would then break them."""
    if file_tokens < 1 or always_loaded_tokens < 1:
        raise InvalidChange("Budgets must be positive numbers of tokens.")
    if file_tokens > MAX_BUDGET or always_loaded_tokens > MAX_BUDGET:
        raise InvalidChange(f"Budgets may be at most {MAX_BUDGET:,} tokens.")
    with transaction.atomic():
        fs = FileSystem.objects.select_for_update().get(pk=filesystem.pk)
        budgets = Budgets(file_tokens=file_tokens, always_loaded_tokens=always_loaded_tokens)
        violations = MemoryDraft.load(fs, contents=()).violations(budgets)
        if violations:
            raise VerificationFailed(violations)
        fs.file_token_budget, fs.always_loaded_token_budget = file_tokens, always_loaded_tokens
        fs.save(update_fields=["file_token_budget", "always_loaded_token_budget"])
    return fs


def filesystem_import(*, filesystem: FileSystem, files: dict[str, str], author_kind: str, author=None,
                      message: str = "", source_id: str = "") -> Revision:
    """Make the file system exactly `files` (path -> text; see memory.portable.archive_read) as
    ONE revision through the verifier: files the zip has are created or updated, files it lacks
    are deleted (index.md and master.md, which cannot be, are emptied). Refused whole (VerificationFailed, with the violations) if the result would
    break the invariant; NothingChanged if the files already are the zip's."""
    live = dict(MemoryFile.objects.filter(filesystem=filesystem).values_list("path", "version"))
    # index.md and master.md cannot be deleted: one the zip lacks is emptied.
    changes = [Change("update", path, content="", base_version=version) if path in SPECIAL
               else Change("delete", path, base_version=version)
               for path, version in sorted(live.items()) if path not in files]
    for path, content in sorted(files.items()):
        if path in live:
            changes.append(Change("update", path, content=content, base_version=live[path]))
        else:
            changes.append(Change("create", path, content=content))
    created = sum(1 for path in files if path not in live)
    deleted = sum(1 for path in live if path not in files and path not in SPECIAL)
    summary = f"Import: {len(files)} files ({created} new, {deleted} removed)"
    return changes_apply(filesystem=filesystem, changes=changes, author_kind=author_kind, author=author,
                         message=message or summary, source_kind=IMPORT_SOURCE, source_id=source_id)


# File systems come with their team or user.

def _create_filesystem(**holder) -> FileSystem:
    with transaction.atomic():
        fs, created = FileSystem.objects.get_or_create(**holder)
        if created:
            changes_apply(filesystem=fs, changes=[Change("create", INDEX, content="")], author_kind=AuthorKind.SYSTEM,
                          message="Created the file system with an empty index")
    return fs


def filesystem_for_team(team) -> FileSystem:
    existing = FileSystem.objects.filter(team=team).first()
    return existing or _create_filesystem(kind=FileSystem.Kind.TEAM, team=team)


def filesystem_for_user(user) -> FileSystem:
    existing = FileSystem.objects.filter(owner=user).first()
    return existing or _create_filesystem(kind=FileSystem.Kind.USER, owner=user)


__all__ = [
    "MAX_FILE_BYTES", "OPS", "AlreadyExists", "AuthorKind", "Change", "MemoryDraft", "FileNotFound", "InvalidChange",
    "MemoryWriteError", "NothingChanged", "StaleVersion", "TokenCounter", "VerificationFailed", "budgets_update",
    "change_revert", "changes_apply", "draft_verify", "file_delete", "filesystem_import", "file_move", "file_restore", "file_write", "filesystem_for_team",
    "filesystem_for_user", "revision_revert",
]
