"""The memory JSON API: same permissions as the pages, clear 4xx, nothing changed on refusal."""

from __future__ import annotations

import pytest

from memory.models import MemoryFile, Revision
from tests.memory.factories import write_linked

BASE = "/api/memory/filesystems"


@pytest.fixture
def team_fs(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "# Jane\nCTO of Initech."})
    return fs


def url(fs, suffix=""):
    return f"{BASE}/{fs.pk}{suffix}"


def test_list_filesystems_scoped(cast, api_for, team_fs):
    body = api_for(cast.member).get(BASE).json()["items"]
    labels = {fs["label"]: fs["can_edit"] for fs in body}
    assert labels == {"team:Acme": False, f"user:{cast.member.email}": True}
    assert api_for(cast.support).get(BASE).json()["items"] == []


def test_files_list_and_get(cast, api_for, team_fs):
    api = api_for(cast.member)
    files = api.get(url(team_fs, "/files")).json()["items"]
    assert [f["path"] for f in files] == ["index.md", "people/jane.md"]
    jane = files[1]
    assert jane["size"] == len(b"# Jane\nCTO of Initech.") and jane["tokens"] > 0 and jane["tokens_exact"] is False
    got = api.get(url(team_fs, "/files/people/jane.md")).json()
    assert got["content"] == "# Jane\nCTO of Initech." and got["version"] == 1


def test_admin_creates_updates_and_reads_history(cast, api_for, team_fs):
    api = api_for(cast.admin)
    created = api.put(url(team_fs, "/files/customers/initech.md"),
                      {"content": "Our biggest customer.", "index_description": "Initech, biggest customer"})
    assert created.status_code == 200, created.json()
    assert created.json()["file"]["version"] == 1
    updated = api.put(url(team_fs, "/files/customers/initech.md"), {"content": "Biggest customer since 2025.",
                                                                      "base_version": 1, "message": "Year"})
    assert updated.status_code == 200 and updated.json()["file"]["version"] == 2
    revision_id = updated.json()["revision_id"]
    detail = api.get(url(team_fs, f"/revisions/{revision_id}")).json()
    assert detail["author_kind"] == "person" and detail["author_email"] == cast.admin.email
    assert "-Our biggest customer." in detail["changes"][0]["diff"]
    assert "+Biggest customer since 2025." in detail["changes"][0]["diff"]
    listing = api.get(url(team_fs, "/revisions?path=customers/initech.md")).json()
    assert listing["count"] == 2
    reverted = api.post(url(team_fs, f"/revisions/{revision_id}/revert"))
    assert reverted.status_code == 200
    assert api.get(url(team_fs, "/files/customers/initech.md")).json()["content"] == "Our biggest customer."


def test_stale_version_is_409(cast, api_for, team_fs):
    api = api_for(cast.admin)
    api.put(url(team_fs, "/files/people/jane.md"), {"content": "v2", "base_version": 1})
    stale = api.put(url(team_fs, "/files/people/jane.md"), {"content": "mine", "base_version": 1})
    assert stale.status_code == 409
    assert "changed since you opened it" in stale.json()["error"]["message"]
    no_version = api.put(url(team_fs, "/files/people/jane.md"), {"content": "mine"})
    assert no_version.status_code == 409 and "base_version" in no_version.json()["error"]["message"]
    assert MemoryFile.objects.get(filesystem=team_fs, path="people/jane.md").content == "v2"


def test_verifier_refusal_is_422_with_violations(cast, api_for, team_fs):
    api = api_for(cast.admin)
    response = api.put(url(team_fs, "/files/orphan.md"), {"content": "nobody links me"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["details"] == [{"path": "orphan.md", "kind": "unlinked", "detail": error["details"][0]["detail"]}]
    deleted = api.delete(url(team_fs, "/files/people/jane.md"))
    assert deleted.status_code == 422 and error["details"]
    assert deleted.json()["error"]["details"][0]["kind"] == "broken_link"
    assert api.delete(url(team_fs, "/files/people/jane.md") + "?update_links=true").status_code == 200


@pytest.mark.parametrize("bad", ["../etc/passwd.md", "notes.txt", "a//b.md", "%2e%2e/x.md", "a%00b.md",
                                 "x" * 300 + ".md", "/abs.md"])
def test_bad_paths_are_422(cast, api_for, team_fs, bad):
    response = api_for(cast.admin).put(url(team_fs, f"/files/{bad}"), {"content": "x", "index_description": ""})
    assert response.status_code == 422, response.content
    assert response.json()["error"]["message"].startswith("Invalid path:")
    assert MemoryFile.objects.filter(filesystem=team_fs).count() == 2


def test_oversize_and_malformed_bodies(cast, api_for, team_fs):
    api = api_for(cast.admin)
    big = api.put(url(team_fs, "/files/big.md"), {"content": "x" * 200_001, "index_description": ""})
    assert big.status_code == 422 and "error" in big.json()
    assert api.put(url(team_fs, "/files/a.md"), raw="{not json").status_code == 400
    assert api.put(url(team_fs, "/files/a.md"), {"content": 12}).status_code == 422
    assert api.post(url(team_fs, "/moves"), {"from": "people/jane.md"}).status_code == 422
    assert Revision.objects.filter(filesystem=team_fs).count() == 2


def test_move(cast, api_for, team_fs):
    api = api_for(cast.admin)
    response = api.post(url(team_fs, "/moves"), {"from": "people/jane.md", "to": "people/jane-park.md",
                                                 "base_version": 1})
    assert response.status_code == 200 and response.json()["file"]["path"] == "people/jane-park.md"
    index = api.get(url(team_fs, "/files/index.md")).json()["content"]
    assert "(people/jane-park.md)" in index
    missing = api.post(url(team_fs, "/moves"), {"from": "people/nobody.md", "to": "x.md"})
    assert missing.status_code == 404


def test_verify_endpoint(cast, api_for, team_fs):
    body = api_for(cast.member).get(url(team_fs, "/verify")).json()
    assert body == {"ok": True, "violations": [], "file_token_budget": 8000, "always_loaded_token_budget": 24000}


def test_member_cannot_write_team_memory(cast, api_for, team_fs):
    api = api_for(cast.member)
    assert api.put(url(team_fs, "/files/people/jane.md"), {"content": "x", "base_version": 1}).status_code == 403
    assert api.delete(url(team_fs, "/files/people/jane.md")).status_code == 403
    own = cast.member.memory_filesystem
    assert api.put(url(own, "/files/notes.md"), {"content": "mine", "index_description": "Notes"}).status_code == 200


def test_other_team_and_support_get_404(cast, api_for, team_fs):
    other = api_for(cast.other_admin)
    revision = team_fs.revisions.first()
    for path in ["/files", "/files/index.md", "/verify", "/revisions", f"/revisions/{revision.pk}"]:
        assert other.get(url(team_fs, path)).status_code == 404, path
        assert api_for(cast.support).get(url(team_fs, path)).status_code == 404, path
    assert other.put(url(team_fs, "/files/index.md"), {"content": "", "base_version": 2}).status_code == 404
    assert other.post(url(team_fs, f"/revisions/{revision.pk}/revert")).status_code == 404
    assert other.get(url(cast.member.memory_filesystem, "/files")).status_code == 404
    own_revision = cast.other_team.memory_filesystem.revisions.first()
    assert api_for(cast.admin).get(url(team_fs, f"/revisions/{own_revision.pk}")).status_code == 404
