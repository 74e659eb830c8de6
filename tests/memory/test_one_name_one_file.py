"""One name, one file (issue 29, part 4).

Paths compare by a canonical key (NFKC, case folded, confusables folded): a second file whose key
equals an existing one's is refused by every writer: the editor, the API, the import and the
memory agent's draft. The import reads raw entry names: a NUL, a name that is not UTF-8 without the
UTF-8 flag, symlink and device entries and encrypted entries are each a clear 4xx, writing nothing.
"""

from __future__ import annotations

import io
import stat
import struct
import unicodedata
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory import services
from memory.draft import AlreadyExists, Draft
from memory.models import MemoryFile, Revision
from memory.paths import path_key
from memory.services import Change
from tests.conftest import ApiClient, client_for
from tests.memory.factories import write_linked

NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")
# (existing, twin): case, Unicode form, full-width, ligature, Cyrillic lookalike, German sharp s.
TWINS = [
    ("notes.md", "Notes.md"),
    (NFC, NFD),
    ("notes.md", "ｎｏｔｅｓ.md"),
    ("file.md", "ﬁle.md"),
    ("notes.md", "n\u043etes.md"),  # Cyrillic о
    ("people/strasse.md", "people/STRAßE.md"),
    ("people/jane.md", "People/Jane.md"),
]


@pytest.mark.parametrize("a, b", TWINS)
def test_twins_share_a_key(a, b):
    assert a != b and path_key(a) == path_key(b)


@pytest.mark.parametrize("a, b", [("resume.md", "résumé.md"), ("file1.md", "filel.md"), ("a.md", "b.md")])
def test_different_names_keep_different_keys(a, b):
    assert path_key(a) != path_key(b)


@pytest.fixture
def fs(cast):
    return cast.team.memory_filesystem


def _existing(fs, path):
    write_linked(fs, {path: "first\n"})
    return MemoryFile.objects.filter(filesystem=fs).count(), Revision.objects.filter(filesystem=fs).count()


def _unchanged(fs, counts):
    return (MemoryFile.objects.filter(filesystem=fs).count(), Revision.objects.filter(filesystem=fs).count()) == counts


@pytest.mark.parametrize("a, b", TWINS)
def test_the_api_refuses_a_twin(cast, fs, a, b):
    counts = _existing(fs, a)
    response = ApiClient(cast.admin).put(f"/api/memory/filesystems/{fs.pk}/files/{b}",
                                         {"content": "second\n", "index_description": "twin"})
    assert response.status_code == 422, response.content
    assert "names the same file as" in response.json()["error"]["message"]
    assert _unchanged(fs, counts)


def test_the_api_refuses_a_move_onto_a_twin_but_allows_a_change_of_case(cast, fs):
    write_linked(fs, {"notes.md": "n\n", "other.md": "o\n"})
    api = ApiClient(cast.admin)
    moved = api.post(f"/api/memory/filesystems/{fs.pk}/moves", {"from": "other.md", "to": "NOTES.md",
                                                               "update_links": True})
    assert moved.status_code == 422 and "names the same file as notes.md" in moved.json()["error"]["message"]
    renamed = api.post(f"/api/memory/filesystems/{fs.pk}/moves", {"from": "notes.md", "to": "Notes.md",
                                                                 "update_links": True})
    assert renamed.status_code == 200, renamed.content
    assert set(MemoryFile.objects.filter(filesystem=fs).values_list("path", flat=True)) >= {"Notes.md", "other.md"}


def test_the_editor_refuses_a_twin(cast, fs):
    counts = _existing(fs, "notes.md")
    response = client_for(cast.admin).post(f"/memory/{fs.pk}/new", {"path": "NOTES.md", "content": "x",
                                                                    "add_to_index": "on", "description": "d"})
    assert response.status_code == 422
    assert "names the same file as notes.md" in response.content.decode()
    assert _unchanged(fs, counts)


def test_the_memory_agents_draft_refuses_a_twin(cast, fs):
    """The hydration memory agent edits a Draft in its tool loop: the refusal is the draft's own."""
    _existing(fs, NFC)
    draft = Draft.load(fs)
    with pytest.raises(AlreadyExists, match="names the same file"):
        draft.apply(Change("create", NFD, content="again"))
    assert draft.changes == [] and NFD not in draft.files
    # Within one batch too: two new twins.
    draft.apply(Change("create", "new.md", content="1"))
    with pytest.raises(AlreadyExists):
        draft.apply(Change("create", "NEW.md", content="2"))
    with pytest.raises(AlreadyExists):
        services.changes_apply(filesystem=fs, changes=[Change("create", "x.md", content="1"),
                                                       Change("create", "X.md", content="2")],
                               author_kind="memory_agent", message="twins")


# --- Import ---------------------------------------------------------------------------------------

def _zip(entries: list[zipfile.ZipInfo | tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for entry in entries:
            if isinstance(entry, tuple):
                archive.writestr(*entry)
            else:
                archive.writestr(entry, b"target.md")
    return buffer.getvalue()


def _patch_name(data: bytes, old: bytes, new: bytes, *, clear_utf8_flag: bool = False) -> bytes:
    """Rewrite an entry's name in both the local header and the central directory (same length)."""
    assert len(old) == len(new) and data.count(old) == 2
    data = data.replace(old, new)
    if clear_utf8_flag:
        out = bytearray(data)
        for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            at = out.find(signature)
            while at != -1:
                flags = struct.unpack_from("<H", out, at + flag_at)[0]
                struct.pack_into("<H", out, at + flag_at, flags & ~0x800)
                at = out.find(signature, at + 4)
        data = bytes(out)
    return data


def _import(cast, fs, data: bytes):
    return ApiClient(cast.admin).client.post(
        f"/api/memory/filesystems/{fs.pk}/import", {"archive": SimpleUploadedFile("m.zip", data, "application/zip")})


def _index_entry() -> tuple[str, bytes]:
    return ("index.md", b"- [notes.md](notes.md) - notes\n")


def _unix(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


@pytest.mark.parametrize("make, says", [
    (lambda: _patch_name(_zip([_index_entry(), ("evil.mdX.txt", b"x")]), b"evil.mdX.txt", b"evil.md\x00.txt"),
     "NUL"),
    (lambda: _patch_name(_zip([_index_entry(), ("caf\u00e9.md", b"x")]), "caf\u00e9.md".encode(), b"caf\xe9x.md",
                         clear_utf8_flag=True), "not UTF-8"),
    (lambda: _zip([_index_entry(), _unix("notes.md", stat.S_IFLNK | 0o777)]), "symbolic link"),
    (lambda: _zip([_index_entry(), _unix("notes.md", stat.S_IFCHR | 0o644)]), "device"),
    (lambda: _zip([_index_entry(), _unix("notes.md", stat.S_IFIFO | 0o644)]), "device, pipe"),
    (lambda: _zip([_index_entry(), ("notes.md", b"a"), ("Notes.md", b"b")]), "name the same file"),
    (lambda: _zip([_index_entry(), (NFC, b"a"), (NFD, b"b")]), "name the same file"),
])
def test_hostile_entries_are_refused_writing_nothing(cast, fs, make, says):
    before = _existing(fs, "keep.md")
    response = _import(cast, fs, make())
    assert 400 <= response.status_code < 500, response.content
    assert says in response.json()["error"]["message"]
    assert _unchanged(fs, before)
    assert not MemoryFile.objects.filter(filesystem=fs, path__startswith="evil").exists()


def test_an_encrypted_entry_is_refused(cast, fs):
    data = bytearray(_zip([_index_entry(), ("notes.md", b"x")]))
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at != -1:
            struct.pack_into("<H", data, at + flag_at, struct.unpack_from("<H", data, at + flag_at)[0] | 0x1)
            at = data.find(signature, at + 4)
    before = _existing(fs, "keep.md")
    response = _import(cast, fs, bytes(data))
    assert response.status_code == 400 and "encrypted" in response.json()["error"]["message"]
    assert _unchanged(fs, before)


def test_a_utf8_name_without_the_flag_is_read_as_utf8(cast, fs):
    """Many tools write UTF-8 names without setting the flag: read as UTF-8, not as cp437 mojibake."""
    name = "caf\u00e9.md"
    data = _patch_name(_zip([("index.md", f"- [{name}]({name}) - c\n".encode()), ("cafXY.md", b"x")]),
                       b"cafXY.md", name.encode(), clear_utf8_flag=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert not any(info.flag_bits & 0x800 for info in archive.infolist())
    response = _import(cast, fs, data)
    assert response.status_code == 200, response.content
    assert MemoryFile.objects.filter(filesystem=fs, path=name).exists()


# --- The writers that bring a name back: the editor's move page, restoring a deleted file, a revert ---

def test_the_editors_move_page_refuses_a_twin(cast, fs):
    write_linked(fs, {"notes.md": "n\n", "other.md": "o\n"})
    counts = _unchanged_counts(fs)
    other = MemoryFile.objects.get(filesystem=fs, path="other.md")
    response = client_for(cast.admin).post(f"/memory/{fs.pk}/move/other.md", {
        "new_path": "ＮＯＴＥＳ.md", "update_links": "on", "base_version": other.version})
    assert response.status_code == 422 and "names the same file as notes.md" in response.content.decode()
    assert _unchanged(fs, counts)


def _unchanged_counts(fs):
    return MemoryFile.objects.filter(filesystem=fs).count(), Revision.objects.filter(filesystem=fs).count()


def _deleted_then_twinned(fs):
    """notes.md written, then deleted, then Notes.md written: the old name is free, then taken by its twin."""
    write_linked(fs, {"notes.md": "old\n"})
    gone = services.file_delete(filesystem=fs, path="notes.md", base_version=None, author_kind="system",
                                update_links=True)
    write_linked(fs, {"Notes.md": "new\n"})
    return gone


def test_restoring_a_deleted_file_whose_twin_now_exists_is_refused(cast, fs):
    gone = _deleted_then_twinned(fs)
    deletion = gone.changes.get(path="notes.md")
    counts = _unchanged_counts(fs)
    with pytest.raises(AlreadyExists, match="names the same file"):
        services.file_restore(filesystem=fs, change=deletion, author_kind="person", author=cast.admin)
    assert _unchanged(fs, counts)


def test_reverting_a_deletion_whose_twin_now_exists_is_refused(cast, fs):
    gone = _deleted_then_twinned(fs)
    counts = _unchanged_counts(fs)
    with pytest.raises(services.MemoryWriteError):
        services.revision_revert(revision=gone, author_kind="person", author=cast.admin)
    assert _unchanged(fs, counts)
    assert set(MemoryFile.objects.filter(filesystem=fs, path__iexact="notes.md").values_list("path", flat=True)) \
        == {"Notes.md"}
