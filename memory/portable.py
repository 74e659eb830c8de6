"""A memory file system as a zip: its markdown files at their paths, plus `manifest.json`
(the file system, each file's version and SHA-256, and every revision with its changes).

    data = archive_build(fs)              # bytes of the zip (memory.selectors.filesystem_export)
    files = archive_read(upload)          # path -> text, or ArchiveRefused (a 4xx) saying why

Reading is defensive, because a zip is outside input: the upload, the number of entries, each
entry and their total are bounded before anything is decompressed (each entry is read at most
one byte past its limit, whatever its header claims); names that climb out of the archive
(`..`, absolute, drive letters, backslashes), encrypted entries, duplicates, files that are
not markdown and text that is not UTF-8 are refused. Nothing is written here: the import is
one revision through `memory.services.filesystem_import`.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from typing import IO

from .draft import MAX_FILE_BYTES, MemoryWriteError
from .models import FileChange, FileSystem, MemoryFile, Revision
from .paths import PathError, clean_path

MANIFEST = "manifest.json"
FORMAT = "lindy-memory/1"
MAX_ARCHIVE_BYTES = 20 * 1024 * 1024
MAX_ENTRIES = 5_000
MAX_TOTAL_BYTES = 50 * 1024 * 1024
MAX_MANIFEST_BYTES = 50 * 1024 * 1024
# Every entry carries the same time, so an export of the same files is the same bytes.
ENTRY_TIME = (1980, 1, 1, 0, 0, 0)


class ArchiveRefused(MemoryWriteError):
    """The upload is not a zip this file system can take; nothing was written."""

    status = 400


class ArchiveTooLarge(ArchiveRefused):
    status = 413


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ENTRY_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def manifest(fs: FileSystem, files: list[tuple[str, int, str]]) -> dict:
    changes: dict[int, list[dict]] = {}
    for revision_id, op, path, old_path in (FileChange.objects.filter(filesystem=fs)
                                            .order_by("revision_id", "pk")
                                            .values_list("revision_id", "op", "path", "old_path")):
        change = {"op": op, "path": path} | ({"old_path": old_path} if old_path else {})
        changes.setdefault(revision_id, []).append(change)
    revisions = [
        {"id": pk, "created_at": created.isoformat(), "author_kind": kind, "author": email or None,
         "message": message, "source_kind": source_kind, "source_id": source_id, "reverts": reverts,
         "changes": changes.get(pk, [])}
        for pk, created, kind, email, message, source_kind, source_id, reverts in (
            Revision.objects.filter(filesystem=fs).order_by("created_at", "pk").values_list(
                "pk", "created_at", "author_kind", "author__email", "message", "source_kind", "source_id",
                "reverts_id"))
    ]
    return {
        "format": FORMAT,
        "filesystem": {"id": fs.pk, "kind": fs.kind, "label": fs.label, "title": fs.title,
                       "file_token_budget": fs.file_token_budget,
                       "always_loaded_token_budget": fs.always_loaded_token_budget},
        "files": [{"path": path, "version": version, "bytes": len(content.encode("utf-8")),
                   "sha256": hashlib.sha256(content.encode("utf-8")).hexdigest()}
                  for path, version, content in files],
        "revisions": revisions,
    }


def archive_build(fs: FileSystem) -> bytes:
    """The zip of `fs`: each file's UTF-8 bytes at its path, and the manifest."""
    files = list(MemoryFile.objects.filter(filesystem=fs).order_by("path").values_list("path", "version", "content"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, _version, content in files:
            archive.writestr(_entry(path), content.encode("utf-8"))
        archive.writestr(_entry(MANIFEST), json.dumps(manifest(fs, files), indent=2, ensure_ascii=False) + "\n")
    return buffer.getvalue()


def export_name(fs: FileSystem) -> str:
    """The download's file name, ASCII only, e.g. memory-team-acme.zip."""
    holder = fs.team.name if fs.team_id and fs.team else (fs.owner.email if fs.owner else str(fs.pk))
    slug = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in holder.lower()).strip("-")[:60]
    return f"memory-{fs.kind}-{slug or fs.pk}.zip"


def _unsafe(name: str) -> bool:
    parts = name.split("/")
    return (name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":")
            or any(part in ("..", ".") for part in parts) or "\x00" in name)


def archive_read(upload: IO[bytes], *, size: int | None = None) -> dict[str, str]:
    """The markdown files of the zip in `upload` (path -> text), or ArchiveRefused."""
    if size is not None and size > MAX_ARCHIVE_BYTES:
        raise ArchiveTooLarge(f"The zip is {size:,} bytes; at most {MAX_ARCHIVE_BYTES:,} are accepted.")
    data = upload.read(MAX_ARCHIVE_BYTES + 1)
    if len(data) > MAX_ARCHIVE_BYTES:
        raise ArchiveTooLarge(f"The zip is over {MAX_ARCHIVE_BYTES:,} bytes, the most accepted.")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError):
        raise ArchiveRefused("That file is not a readable zip archive.") from None
    if len(infos) > MAX_ENTRIES:
        raise ArchiveTooLarge(f"The zip holds {len(infos):,} entries; at most {MAX_ENTRIES:,} are accepted.")
    declared = 0
    for info in infos:
        if _unsafe(info.filename):
            raise ArchiveRefused(f"Refused: the entry {info.filename!r} points outside the archive.")
        if info.flag_bits & 0x1:
            raise ArchiveRefused(f"Refused: the entry {info.filename!r} is encrypted.")
        declared += info.file_size
    if declared > MAX_TOTAL_BYTES:
        raise ArchiveTooLarge(f"The zip would unpack to {declared:,} bytes; at most {MAX_TOTAL_BYTES:,} are accepted.")
    files: dict[str, str] = {}
    total = 0
    for info in infos:
        name = info.filename
        if info.is_dir():
            continue
        if name == MANIFEST or name.startswith("__MACOSX/"):  # macOS Finder's resource forks
            continue  # written on export for people and tools; the files themselves are the import
        try:
            path = clean_path(name)
        except PathError as exc:
            raise ArchiveRefused(f"Refused: {name!r} cannot be a memory file: {exc}") from None
        if path in files:
            raise ArchiveRefused(f"Refused: {path} appears twice in the zip.")
        if info.file_size > MAX_FILE_BYTES:
            raise ArchiveTooLarge(f"Refused: {path} is {info.file_size:,} bytes; a memory file may be at most "
                                  f"{MAX_FILE_BYTES:,}.")
        try:
            with archive.open(info) as entry:
                raw = entry.read(MAX_FILE_BYTES + 1)
        except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError, OSError, RuntimeError) as exc:
            raise ArchiveRefused(f"Refused: {path} could not be unpacked ({exc}).") from None
        if len(raw) > MAX_FILE_BYTES:  # the header lied about its size: a zip bomb
            raise ArchiveTooLarge(f"Refused: {path} unpacks to more than {MAX_FILE_BYTES:,} bytes.")
        total += len(raw)
        if total > MAX_TOTAL_BYTES:
            raise ArchiveTooLarge(f"The zip unpacks to more than {MAX_TOTAL_BYTES:,} bytes.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ArchiveRefused(f"Refused: {path} is not UTF-8 text.") from None
        if "\x00" in text:
            raise ArchiveRefused(f"Refused: {path} contains NUL characters.")
        files[path] = text
    if not files:
        raise ArchiveRefused("The zip holds no markdown files.")
    return files
