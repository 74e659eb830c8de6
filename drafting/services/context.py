"""The user's context document: `drafting.md` in the USER's memory file system, linked from
the index. Every write is a memory revision (verified, diffable, revertible) by the learner,
the system or the user; the user edits it in the memory editor like any file."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from memory import services as memory_services
from memory.models import FileChange, MemoryFile, Revision

PATH = "drafting.md"
INDEX_DESCRIPTION = "How I work and write: context, contacts and style that email drafts follow."
SOURCE_KIND = "drafting_context"


@dataclass(frozen=True)
class ContextDoc:
    text: str
    version: int | None  # the file's version; None when the user has no drafting.md yet
    revision_id: int | None  # the revision that last wrote it
    sha256: str


def sha256(text: str) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


def context_read(user) -> ContextDoc:
    """The user's drafting.md now (empty text when it does not exist)."""
    fs = memory_services.filesystem_for_user(user)
    row = MemoryFile.objects.filter(filesystem=fs, path=PATH).values_list("content", "version").first()
    if row is None:
        return ContextDoc(text="", version=None, revision_id=None, sha256=sha256(""))
    content, version = row
    revision_id = (FileChange.objects.filter(filesystem=fs, path=PATH, after_version=version)
                   .order_by("-pk").values_list("revision_id", flat=True).first())
    return ContextDoc(text=content, version=version, revision_id=revision_id, sha256=sha256(content))


def context_write(*, user, text: str, author, reason: str, base_version: int | None = None,
                  source_kind: str = SOURCE_KIND, source_id: str = "") -> Revision:
    """Write the user's drafting.md as one memory revision. `author`: "learner", "system", or a
    User (a person: the user editing their own document). `base_version`: the version the
    writer read (StaleVersion when it moved since); None takes the current one. Raises
    memory's MemoryWriteError subclasses (VerificationFailed over budget, NothingChanged...)."""
    if isinstance(author, str):
        if author not in (Revision.AuthorKind.LEARNER, Revision.AuthorKind.SYSTEM):
            raise ValueError(f"Unknown author {author!r}: 'learner', 'system' or a user.")
        author_kind, author_user = author, None
    else:
        if author.pk != user.pk:
            raise PermissionError("Only the user edits their own context document.")
        author_kind, author_user = Revision.AuthorKind.PERSON, author
    fs = memory_services.filesystem_for_user(user)
    current = MemoryFile.objects.filter(filesystem=fs, path=PATH).values_list("version", flat=True).first()
    if current is None:
        return memory_services.file_write(
            filesystem=fs, path=PATH, content=text, base_version=None, author_kind=author_kind,
            author=author_user, message=reason[:500], index_description=INDEX_DESCRIPTION, create_only=True,
            source_kind=source_kind, source_id=source_id)
    return memory_services.changes_apply(
        filesystem=fs, changes=[memory_services.Change("update", PATH, content=text,
                                                       base_version=current if base_version is None else base_version)],
        author_kind=author_kind, author=author_user, message=reason[:500], source_kind=source_kind,
        source_id=source_id)
