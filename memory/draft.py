"""One draft of a memory file system: what every writer edits before it becomes a revision.

    draft = MemoryDraft.load(fs, counter=TokenCounter(user))   # the live files
    draft.apply(Change("update", "people/jane.md", content="...", base_version=3))
    draft.move("people/jane.md", "people/jane-park.md")  # the move, and the links that follow it
    draft.violations()                                   # the verifier's verdict on the draft
    changes_apply(filesystem=fs, changes=draft.changes, counter=draft.counter, ...)

Both writers of memory use it: `memory.services.changes_apply` (the browser, the API, restores,
reverts, the learner) replays a batch of changes on a draft of the locked file system and
writes it as one revision; the hydration memory agent edits a draft in its tool loop and hands
its `changes` to `changes_apply`.

Token counts: a file loaded from the database keeps its stored count; a file a change writes is
counted lazily (when the verifier needs it) by the draft's `TokenCounter`, which counts each
distinct text once and remembers it. Passing the same counter to `changes_apply` means the
revision reuses the counts the draft already made: no text is counted twice.

Errors are `MemoryWriteError`s whose `status` says how an API answers them; a batch that
would change nothing raises `NothingChanged` (an `InvalidChange`), so callers can tell it apart
without reading messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from router import gateway

from . import links
from .models import FileChange, FileSystem, MemoryFile
from .paths import INDEX, SPECIAL, PathError, clean_path, path_key
from .verifier import Budgets, Violation, verify

MAX_FILE_BYTES = 200_000
OPS = ("create", "update", "write", "move", "delete")


# --- Errors ------------------------------------------------------------------------------------

class MemoryWriteError(Exception):
    """A write that was refused. `status` says how an API answers it."""

    status = 400

    def __init__(self, message: str, details: list | None = None):
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidChange(MemoryWriteError):
    status = 422


class AlreadyExists(InvalidChange):
    """A create, or a move, onto a path that already holds a file."""


class NothingChanged(InvalidChange):
    """The batch would leave every file as it is: there is no revision to write."""


class FileNotFound(MemoryWriteError):
    status = 404


class StaleVersion(MemoryWriteError):
    status = 409


class VerificationFailed(MemoryWriteError):
    """The file system would break the verifier; `violations` lists why."""

    status = 422

    def __init__(self, violations: list[Violation]):
        self.violations = violations
        summary = "; ".join(v.detail for v in violations[:5])
        more = f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""
        super().__init__(f"Refused: the memory would fail the verifier. {summary}{more}",
                         [v.as_dict() for v in violations])


# --- Changes -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Change:
    """One step of a batch. `write` creates or updates; `base_version` (when given) must be
    the file's current version, so nobody overwrites a change they have not seen."""

    op: str
    path: str
    content: str | None = None
    new_path: str | None = None
    base_version: int | None = None


def check_path(raw, what: str = "path") -> str:
    """The clean form of a path, or InvalidChange saying what is wrong with it."""
    try:
        return clean_path(raw)
    except PathError as exc:
        raise InvalidChange(f"Invalid {what} {raw!r}: {exc}") from None


def check_content(content) -> str:
    """File content as a write accepts it: text, no NUL character, at most MAX_FILE_BYTES."""
    if not isinstance(content, str):
        raise InvalidChange("File content must be text.")
    if "\x00" in content:
        raise InvalidChange("File content may not contain NUL characters.")
    if len(content.encode("utf-8")) > MAX_FILE_BYTES:
        raise InvalidChange(f"A memory file may be at most {MAX_FILE_BYTES} bytes: split it.")
    return content


def _acceptable(content) -> bool:
    try:
        check_content(content)
    except InvalidChange:
        return False
    return True


def written_contents(changes: Iterable[Change]) -> list[str]:
    """The contents `changes` leave in files they write (the last text written to each path
    that is still there at the end), in order. Pure: a caller counts these before it locks
    the file system, so counting never waits on the network under the lock."""
    final: dict[str, str] = {}
    for change in changes:
        try:
            path = clean_path(change.path)
        except PathError:
            continue
        if change.op in ("create", "update", "write"):
            content = change.content if change.content is not None else ""
            if _acceptable(content):
                final[path] = content
            else:
                final.pop(path, None)
        elif change.op == "move":
            try:
                new_path = clean_path(change.new_path or "")
            except PathError:
                continue
            if new_path != path and path in final:
                final[new_path] = final.pop(path)
        elif change.op == "delete":
            final.pop(path, None)
    return list(dict.fromkeys(final.values()))


# --- Token counts ------------------------------------------------------------------------------

class TokenCounter:
    """(tokens, exact) of a text through the router's counter, each distinct text counted once.

    A draft counts with it; `changes_apply(counter=...)` reuses it, so the revision stores the
    counts the draft made instead of counting the same text again."""

    def __init__(self, user=None):
        self.user = user
        self._known: dict[str, tuple[int, bool]] = {}

    def __call__(self, text: str) -> tuple[int, bool]:
        if not text:
            return 0, True
        known = self._known.get(text)
        if known is None:
            known = self._known[text] = gateway.count_tokens(text=text, user=self.user)
        return known

    def prime(self, texts: Iterable[str]) -> None:
        """Count every text not counted yet (before taking a lock)."""
        for text in texts:
            self(text)

    def knows(self, text: str) -> bool:
        return not text or text in self._known


# --- The draft ---------------------------------------------------------------------------------

@dataclass
class DraftFile:
    id: int | None  # the database row; None for a file this draft created
    version: int
    content: str | None  # None: not loaded (the verifier needs only index.md's and master.md's)
    tokens: int | None  # None: written by this draft and not counted yet
    exact: bool = False


class MemoryDraft:
    """A file system's files as a writer is leaving them, and the changes that lead there.

    `changes` are the changes that took effect, normalized (clean paths, `write` resolved to
    create or update, `base_version` set to the version each one edited), so replaying them
    on the live files with `changes_apply` refuses them if someone changed a file since.
    `records` are the unsaved FileChange rows of the revision."""

    def __init__(self, filesystem: FileSystem, files: dict[str, DraftFile], *, counter: TokenCounter | None = None):
        self.filesystem = filesystem
        self.files = files
        self.counter = counter if counter is not None else TokenCounter()
        self.changes: list[Change] = []
        self.records: list[FileChange] = []
        # The rows load() read (id -> path): under the file system's lock, the live files, so
        # the writer of the revision needs not list them again.
        self.loaded: dict[int, str] | None = None
        # Canonical key (memory.paths.path_key) -> path, built on the first create or move.
        self._keys: dict[str, str] | None = None

    @classmethod
    def load(cls, filesystem: FileSystem, *, contents: Iterable[str] | None = None, user=None,
             counter: TokenCounter | None = None) -> MemoryDraft:
        """The live files of `filesystem`. `contents` names the files whose text to load besides
        index.md and master.md (None: every file's, for a writer that reads them all); a file
        not loaded is read from the database when a change needs it."""
        rows = MemoryFile.objects.filter(filesystem=filesystem)
        if contents is None:
            files = {
                path: DraftFile(pk, version, content, tokens, exact)
                for pk, path, version, tokens, exact, content in rows.values_list(
                    "pk", "path", "version", "tokens", "tokens_exact", "content")
            }
        else:
            files = {
                path: DraftFile(pk, version, None, tokens, exact)
                for pk, path, version, tokens, exact in rows.values_list(
                    "pk", "path", "version", "tokens", "tokens_exact")
            }
            wanted = [p for p in set(contents) | set(SPECIAL) if p in files]
            if wanted:
                for path, content in rows.filter(path__in=wanted).values_list("path", "content"):
                    files[path].content = content
        draft = cls(filesystem, files, counter=counter if counter is not None else TokenCounter(user))
        draft.loaded = {file.id: path for path, file in files.items() if file.id is not None}
        return draft

    # Reading

    def content(self, path: str) -> str:
        """The text of `path` in the draft (FileNotFound if there is none)."""
        file = self.files.get(path)
        if file is None:
            raise FileNotFound(f"There is no file {path}.")
        return self._content(file)

    @staticmethod
    def _content(file: DraftFile) -> str:
        if file.content is None:
            file.content = (MemoryFile.objects.filter(pk=file.id).values_list("content", flat=True).first() or ""
                            if file.id is not None else "")
        return file.content

    def twin(self, path: str, *, other_than: str | None = None) -> str | None:
        """Another file whose name means the same as `path` (same canonical key: `Notes.md` for
        `notes.md`, NFD for NFC, full-width for ASCII, `ﬁle.md` for `file.md`), or None."""
        key = path_key(path)
        found = self._keys.get(key) if self._keys is not None else None
        if self._keys is None or (found is not None and found not in self.files):
            self._keys = {}
            for existing in self.files:
                self._keys.setdefault(path_key(existing), existing)
            found = self._keys.get(key)
        return None if found in (None, path, other_than) else found

    def _twin_refused(self, path: str, *, other_than: str | None = None) -> None:
        existing = self.twin(path, other_than=other_than)
        if existing is not None:
            raise AlreadyExists(f"{path} names the same file as {existing} (names are compared ignoring case, "
                                f"Unicode form and lookalike letters): edit {existing} instead, or choose another name.")

    def _keys_moved(self, old: str | None, new: str | None) -> None:
        if self._keys is None:
            return
        if old is not None and self._keys.get(path_key(old)) == old:
            del self._keys[path_key(old)]
        if new is not None:
            self._keys.setdefault(path_key(new), new)

    def changed_paths(self) -> set[str]:
        return {record.path for record in self.records}

    # Changing

    def apply(self, change: Change) -> FileChange | None:
        """Apply one change to the draft; the FileChange it records, or None when it changes
        nothing (an update to the same text, a move onto itself). Raises MemoryWriteError and
        leaves the draft as it was when the change is refused."""
        files = self.files
        op = change.op
        if op not in OPS:
            raise InvalidChange(f"Unknown change {op!r}: use one of {', '.join(OPS)}.")
        path = check_path(change.path)
        current = files.get(path)
        if op == "write":
            op = "update" if current else "create"
        if op == "create":
            if current is not None:
                raise AlreadyExists(f"{path} already exists: update it instead (with the version you edited).")
            if change.base_version not in (None, 0):
                raise StaleVersion(
                    f"{path} no longer exists (it was at version {change.base_version} when you opened it).")
            content = check_content(change.content if change.content is not None else "")
            self._twin_refused(path)
            files[path] = DraftFile(None, 1, content, None)
            self._keys_moved(None, path)
            return self._record(Change("create", path, content=content),
                                FileChange(op="create", path=path, after=content, after_version=1))
        if current is None:
            raise FileNotFound(f"There is no file {path}.")
        if change.base_version is not None and change.base_version != current.version:
            raise StaleVersion(
                f"{path} changed since you opened it (you edited version {change.base_version}, it is now at "
                f"version {current.version}). Reload it, then apply your change again."
            )
        version = current.version
        if op == "update":
            content = check_content(change.content if change.content is not None else "")
            before = self._content(current)
            if content == before:
                return None
            current.content, current.tokens, current.exact = content, None, False
            current.version += 1
            return self._record(
                Change("update", path, content=content, base_version=version),
                FileChange(op="update", path=path, before=before, after=content, before_version=version,
                           after_version=current.version),
            )
        if op == "move":
            if path in SPECIAL:
                raise InvalidChange(f"{path} is special and cannot be moved.")
            new_path = check_path(change.new_path, "new path")
            if new_path == path:
                return None
            if new_path in files:
                raise AlreadyExists(f"{new_path} already exists.")
            if new_path in SPECIAL:
                raise InvalidChange(f"{new_path} is reserved for the file system's own {new_path}.")
            self._twin_refused(new_path, other_than=path)
            content = self._content(current)
            del files[path]
            files[new_path] = current
            self._keys_moved(path, new_path)
            current.version += 1
            return self._record(
                Change("move", path, new_path=new_path, base_version=version),
                FileChange(op="move", path=new_path, old_path=path, before=content, after=content,
                           before_version=version, after_version=current.version),
            )
        # delete
        if path in SPECIAL:
            raise InvalidChange(f"{path} is special and cannot be deleted; empty it instead.")
        content = self._content(current)
        del files[path]
        self._keys_moved(path, None)
        return self._record(Change("delete", path, base_version=version),
                            FileChange(op="delete", path=path, before=content, before_version=version))

    def _record(self, change: Change, record: FileChange) -> FileChange:
        self.changes.append(change)
        self.records.append(record)
        return record

    def move(self, path: str, new_path: str, *, base_version: int | None = None,
             update_links: bool = True) -> list[Change]:
        """Move a file; with `update_links`, the links in index.md and master.md follow it.
        The changes that took effect."""
        start = len(self.changes)
        if self.apply(Change("move", path, new_path=new_path, base_version=base_version)) and update_links:
            for fix in self.link_fixes_after_move(check_path(path), check_path(new_path, "new path")):
                self.apply(fix)
        return self.changes[start:]

    def delete(self, path: str, *, base_version: int | None = None, update_links: bool = True) -> list[Change]:
        """Delete a file; with `update_links`, its index lines go and master's links to it
        become plain text. The changes that took effect."""
        start = len(self.changes)
        self.apply(Change("delete", path, base_version=base_version))
        if update_links:
            for fix in self.link_fixes_after_delete(check_path(path)):
                self.apply(fix)
        return self.changes[start:]

    # Link fixes: updates of index.md and master.md (at their versions in this draft) that
    # keep the file system verifiable after a move or a delete. Nothing is applied here.

    def link_fixes_after_move(self, path: str, new_path: str) -> list[Change]:
        return self._link_fixes(lambda _, text: links.rewrite_links(text, path, new_path))

    def link_fixes_after_delete(self, path: str) -> list[Change]:
        return self._link_fixes(
            lambda special, text: links.drop_index_lines(text, path) if special == INDEX else links.unlink(text, path)
        )

    def _link_fixes(self, edit: Callable[[str, str], str]) -> list[Change]:
        fixes = []
        for special in SPECIAL:
            file = self.files.get(special)
            if file is None:
                continue
            content = self._content(file)
            new = edit(special, content)
            if new != content:
                fixes.append(Change("update", special, content=new, base_version=file.version))
        return fixes

    # Verifying

    def count(self) -> None:
        """Count every file written by this draft and not counted yet (each text once)."""
        for file in self.files.values():
            if file.tokens is None:
                file.tokens, file.exact = self.counter(self._content(file))

    def tokens(self) -> Mapping[str, int]:
        self.count()
        return {path: file.tokens or 0 for path, file in self.files.items()}

    def violations(self, budgets: Budgets | None = None) -> list[Violation]:
        """The verifier's verdict on the draft, against `budgets` (default: the file system's)."""
        tokens = self.tokens()
        # Only index.md and master.md are read for links; the others are counted already.
        files = {path: self._content(file) if path in SPECIAL else "" for path, file in self.files.items()}
        return verify(files, budgets or self.filesystem.budgets, tokens=tokens)


__all__ = [
    "MAX_FILE_BYTES", "OPS", "AlreadyExists", "Change", "MemoryDraft", "DraftFile", "FileNotFound", "InvalidChange",
    "MemoryWriteError", "NothingChanged", "StaleVersion", "TokenCounter", "VerificationFailed", "check_content",
    "check_path", "written_contents",
]
