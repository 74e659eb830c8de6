"""Your data, portable: a file system downloads as a zip (markdown files + a manifest of
revisions) and a zip uploads as ONE revision through the verifier; bad archives are 4xx."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory import portable, services
from memory.models import IMPORT_SOURCE, MemoryFile, Revision
from memory.services import Change
from tests.conftest import client_for
from tests.memory.factories import write_linked

FILES = {
    "people/jane.md": "# Jane\nCTO of **Initech**.\n\n- likes: tea\n- ünïcödé ✓ 日本語\n",
    "procedures/deploy.md": "Staging first.\r\nThen prod.\n   trailing spaces   \n",
    "notes/empty-ish.md": "x",
}


@pytest.fixture
def team_fs(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, FILES)
    services.changes_apply(filesystem=fs, changes=[Change("create", "master.md", content="Acme sells anvils.\n")],
                           author_kind="person", author=cast.admin, message="Master")
    return fs


def _zip(entries: dict[str, bytes], *, compress=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compress) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def _upload(client, fs, data: bytes, name="memory.zip"):
    return client.post(f"/memory/{fs.pk}/import", {"archive": SimpleUploadedFile(name, data, "application/zip")})


def _live(fs) -> dict[str, bytes]:
    return {path: content.encode("utf-8") for path, content in MemoryFile.objects.filter(filesystem=fs)
            .values_list("path", "content")}


def test_export_is_a_zip_of_markdown_files_and_a_manifest(cast, team_fs):
    response = client_for(cast.member).get(f"/memory/{team_fs.pk}/export.zip")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert 'filename="memory-team-acme.zip"' in response["Content-Disposition"]
    members = _members(response.content)
    assert set(members) == {"index.md", "master.md", *FILES, "manifest.json"}
    for path, content in FILES.items():
        assert members[path] == content.encode("utf-8")
    manifest = json.loads(members["manifest.json"])
    assert manifest["format"] == "lindy-memory/1"
    assert [f["path"] for f in manifest["files"]] == sorted({"index.md", "master.md", *FILES})
    revisions = manifest["revisions"]
    assert len(revisions) == Revision.objects.filter(filesystem=team_fs).count() == 3
    assert revisions[-1]["message"] == "Master" and revisions[-1]["author"] == "admin@acme.example"
    assert revisions[-1]["changes"] == [{"op": "create", "path": "master.md"}]


def test_export_is_visible_only_to_readers(cast, team_fs):
    assert client_for(cast.other_admin).get(f"/memory/{team_fs.pk}/export.zip").status_code == 404
    assert client_for(cast.support).get(f"/memory/{team_fs.pk}/export.zip").status_code == 404


def test_export_then_import_round_trips_byte_for_byte(cast, team_fs):
    admin = client_for(cast.admin)
    exported = admin.get(f"/memory/{team_fs.pk}/export.zip").content
    before = _live(team_fs)
    # Change everything: edit, delete, add; then import the export back.
    jane = team_fs.files.get(path="people/jane.md")
    services.file_write(filesystem=team_fs, path="people/jane.md", content="gone", base_version=jane.version,
                        author_kind="person", author=cast.admin)
    services.file_delete(filesystem=team_fs, path="notes/empty-ish.md", base_version=None, author_kind="person")
    services.file_write(filesystem=team_fs, path="extra.md", content="new", base_version=None, author_kind="person",
                        index_description="extra")
    revisions = Revision.objects.filter(filesystem=team_fs).count()

    response = _upload(admin, team_fs, exported)
    assert response.status_code == 302
    assert Revision.objects.filter(filesystem=team_fs).count() == revisions + 1  # ONE revision
    revision = Revision.objects.filter(filesystem=team_fs).first()
    assert revision.source_kind == IMPORT_SOURCE and revision.author == cast.admin
    assert _live(team_fs) == before
    again = _members(admin.get(f"/memory/{team_fs.pk}/export.zip").content)
    original = _members(exported)
    assert {k: v for k, v in again.items() if k != "manifest.json"} == {
        k: v for k, v in original.items() if k != "manifest.json"}

    # Into another file system (the user's own): the same bytes again.
    own = services.filesystem_for_user(cast.admin)
    assert _upload(admin, own, exported).status_code == 302
    assert _live(own) == before


def test_import_that_breaks_the_invariant_is_refused_whole_with_violations(cast, team_fs):
    before = _live(team_fs)
    revisions = Revision.objects.count()
    # people/jane.md is no longer linked from index.md: a dead memory, and a dangling link.
    data = _zip({"index.md": b"- [ghost](ghost.md) \xe2\x80\x94 nobody\n", "people/jane.md": b"# Jane\n"})
    response = _upload(client_for(cast.admin), team_fs, data)
    assert response.status_code == 422
    html = response.content.decode()
    assert "Refused: the memory would fail the verifier" in html
    assert "ghost.md" in html and "people/jane.md" in html
    assert _live(team_fs) == before and Revision.objects.count() == revisions


def _bomb() -> bytes:
    """An entry whose header claims 10 bytes but unpacks to 5 MB."""
    data = _zip({"bomb.md": b"0" * 5_000_000})
    # Rewrite the declared uncompressed size in both the local header and the central directory.
    real = (5_000_000).to_bytes(4, "little")
    return data.replace(real, (10).to_bytes(4, "little"))


@pytest.mark.parametrize(("data", "status", "says"), [
    (b"not a zip at all", 400, "not a readable zip"),
    (_zip({"../escape.md": b"x"}), 400, "outside the archive"),
    (_zip({"/etc/passwd.md": b"x"}), 400, "outside the archive"),
    (_zip({"a\\..\\b.md": b"x"}), 400, "outside the archive"),
    (_zip({"index.md": b"\xff\xfe not utf-8"}), 400, "not UTF-8"),
    (_zip({"picture.png": b"\x89PNG"}), 400, "cannot be a memory file"),
    (_zip({"big.md": b"a" * 300_000}), 413, "at most 200,000"),
    (_bomb(), 400, "could not be unpacked"),  # never read past its claimed size: its CRC fails
    (_zip({"manifest.json": b"{}"}), 400, "no markdown files"),
])
def test_bad_archives_are_4xx_and_change_nothing(cast, team_fs, data, status, says):
    before, revisions = _live(team_fs), Revision.objects.count()
    response = _upload(client_for(cast.admin), team_fs, data)
    assert response.status_code == status, response.content[:500]
    assert says in response.content.decode()
    assert _live(team_fs) == before and Revision.objects.count() == revisions


def test_too_many_entries_and_oversized_upload_are_413(cast, team_fs, monkeypatch):
    monkeypatch.setattr(portable, "MAX_ENTRIES", 3)
    data = _zip({f"f{i}.md": b"x" for i in range(4)})
    assert _upload(client_for(cast.admin), team_fs, data).status_code == 413
    monkeypatch.setattr(portable, "MAX_ARCHIVE_BYTES", 100)
    response = _upload(client_for(cast.admin), team_fs, _zip({"index.md": b"y" * 1000}, compress=zipfile.ZIP_STORED))
    assert response.status_code == 413


def test_import_needs_edit_rights_and_a_file(cast, team_fs):
    data = _zip({"index.md": b""})
    assert _upload(client_for(cast.member), team_fs, data).status_code == 403  # reads team memory, can't edit
    assert _upload(client_for(cast.other_admin), team_fs, data).status_code == 404  # another team's
    assert client_for(cast.admin).post(f"/memory/{team_fs.pk}/import", {}).status_code == 400
    page = client_for(cast.admin).get(f"/memory/{team_fs.pk}/import")
    assert page.status_code == 200 and b'enctype="multipart/form-data"' in page.content


def test_import_of_the_same_files_says_nothing_changed(cast, team_fs):
    exported = client_for(cast.admin).get(f"/memory/{team_fs.pk}/export.zip").content
    response = _upload(client_for(cast.admin), team_fs, exported)
    assert response.status_code == 422 and "Nothing changed" in response.content.decode()


def test_api_export_and_import(cast, team_fs):
    admin = client_for(cast.admin)
    exported = admin.get(f"/api/memory/filesystems/{team_fs.pk}/export")
    assert exported.status_code == 200 and exported["Content-Type"] == "application/zip"
    own = services.filesystem_for_user(cast.admin)
    response = admin.post(f"/api/memory/filesystems/{own.pk}/import",
                          {"archive": SimpleUploadedFile("m.zip", exported.content, "application/zip")})
    assert response.status_code == 200, response.content
    assert Revision.objects.get(pk=response.json()["revision_id"]).source_kind == IMPORT_SOURCE
    assert _live(own) == _live(team_fs)
    bad = admin.post(f"/api/memory/filesystems/{own.pk}/import",
                     {"archive": SimpleUploadedFile("m.zip", _zip({"../x.md": b"x"}), "application/zip")})
    assert bad.status_code == 400 and "outside the archive" in bad.json()["error"]["message"]
    assert client_for(cast.other_admin).get(f"/api/memory/filesystems/{team_fs.pk}/export").status_code == 404
