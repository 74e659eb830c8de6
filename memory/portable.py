"""A memory file system as a zip: its markdown files at their paths, plus `manifest.json`
(the file system, each file's version and SHA-256, and every revision with its changes).

    data = archive_build(fs)              # bytes of the zip (memory.selectors.filesystem_export)
    files = archive_read(upload)          # path -> text, or ArchiveRefused (a 4xx) saying why

Reading is defensive, because a zip is outside input: the upload, the number of entries, each
entry and their total are bounded before anything is decompressed (each entry is read at most
one byte past its limit, whatever its header claims); names that climb out of the archive
(`..`, absolute, drive letters, backslashes), names with a NUL or that are not UTF-8 (read raw,
before zipfile's clean-up), symbolic links, devices, encrypted entries, duplicates (by canonical
key: memory.paths.path_key), files that are not markdown and text that is not UTF-8 are refused. Nothing is written here: the import is
one revision through `memory.services.filesystem_import`.
"""

from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile
from typing import IO

from .draft import MAX_FILE_BYTES, MemoryWriteError
from .models import FileChange, FileSystem, MemoryFile, Revision
from .paths import PathError, clean_path, path_key

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


UTF8_FLAG = 0x800  # general purpose bit 11: the name is UTF-8 (APPNOTE 4.4.4)
ENCRYPTED_FLAGS = 0x1 | 0x40  # bit 0: encrypted; bit 6: strong encryption
AES_METHOD = 99  # WinZip AES: encrypted whatever the flags say
UNIX = 3  # create_system of entries whose external attributes carry a Unix mode


def raw_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as the archive stores it, read before zipfile's clean-up (which cuts a
    name at its first NUL, so `evil.md\x00.txt` became `evil.md`). Without the UTF-8 flag
    zipfile decodes the bytes as cp437, which maps every byte: re-encoding gives the bytes back,
    and they must be UTF-8 (what every tool writes today, flag or not)."""
    name = info.orig_filename
    if info.flag_bits & UTF8_FLAG:
        return name
    try:
        data = name.encode("cp437")
    except UnicodeEncodeError:  # a metadata_encoding other than cp437 was used: take it as given
        return name
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveRefused(f"Refused: the entry name {data!r} is not UTF-8 and the zip does not say "
                             f"which encoding it uses (no UTF-8 flag).") from None


def _kind_refusal(info: zipfile.ZipInfo, name: str) -> str:
    """Why an entry that is not a plain file or folder is refused, or ""."""
    if info.flag_bits & ENCRYPTED_FLAGS or info.compress_type == AES_METHOD:
        return f"Refused: the entry {name!r} is encrypted."
    mode = info.external_attr >> 16
    if info.create_system == UNIX and mode:
        if stat.S_ISLNK(mode):
            return f"Refused: the entry {name!r} is a symbolic link; only files and folders are imported."
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            return f"Refused: the entry {name!r} is a device, pipe or socket; only files and folders are imported."
    return ""


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
    names: dict[int, str] = {}
    for index, info in enumerate(infos):
        name = raw_name(info)
        if "\x00" in name:
            raise ArchiveRefused(f"Refused: the entry name {name!r} contains a NUL character.")
        if _unsafe(name):
            raise ArchiveRefused(f"Refused: the entry {name!r} points outside the archive.")
        refusal = _kind_refusal(info, name)
        if refusal:
            raise ArchiveRefused(refusal)
        names[index] = name
        declared += info.file_size
    if declared > MAX_TOTAL_BYTES:
        raise ArchiveTooLarge(f"The zip would unpack to {declared:,} bytes; at most {MAX_TOTAL_BYTES:,} are accepted.")
    files: dict[str, str] = {}
    keys: dict[str, str] = {}
    total = 0
    for index, info in enumerate(infos):
        name = names[index]
        if name.endswith("/"):
            continue
        if name == MANIFEST or name.startswith("__MACOSX/"):  # macOS Finder's resource forks
            continue  # written on export for people and tools; the files themselves are the import
        try:
            path = clean_path(name)
        except PathError as exc:
            raise ArchiveRefused(f"Refused: {name!r} cannot be a memory file: {exc}") from None
        if path in files:
            raise ArchiveRefused(f"Refused: {path} appears twice in the zip.")
        twin = keys.setdefault(path_key(path), path)
        if twin != path:
            raise ArchiveRefused(f"Refused: {path} and {twin} name the same file (names are compared ignoring "
                                 f"case, Unicode form and lookalike letters).")
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
