"""Memory pages: permissions, editing without JavaScript, diffs, reverts, bounded queries."""

from __future__ import annotations

import pytest

from memory import services
from memory.models import MemoryFile
from memory.services import Change
from tests.conftest import client_for
from tests.memory.factories import write_linked


@pytest.fixture
def team_fs(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "# Jane\nCTO of **Initech**.", "procedures/deploy.md": "Staging first."})
    return fs


def test_nav_shows_memory_to_workspace_users_only(cast):
    assert b'data-nav="memory"' in client_for(cast.member).get("/").content
    assert b'data-nav="memory"' not in client_for(cast.support).get("/").content


def test_home_lists_own_and_team_memory(cast, team_fs):
    page = client_for(cast.member).get("/memory/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Acme team memory" in html and "read only" in html and "read and edit" in html
    assert client_for(cast.support).get("/memory/").status_code == 404


def test_tree_pins_index_and_master_and_lists_folders(cast, team_fs):
    services.changes_apply(filesystem=team_fs, changes=[Change("create", "master.md", content="Acme sells anvils.")],
                           author_kind="person")
    html = client_for(cast.member).get(f"/memory/{team_fs.pk}/").content.decode()
    assert html.index('data-file="index.md"') < html.index('data-file="master.md"') < html.index("people/")
    assert 'data-verifier="pass"' in html
    assert "est." in html  # offline counts are the conservative estimate, and say so
    folder = client_for(cast.member).get(f"/memory/{team_fs.pk}/", {"dir": "people/"}).content.decode()
    assert 'data-file="people/jane.md"' in folder and 'data-file="procedures/deploy.md"' not in folder


def test_search_names_and_contents(cast, team_fs):
    html = client_for(cast.member).get(f"/memory/{team_fs.pk}/", {"q": "staging"}).content.decode()
    assert 'data-file="procedures/deploy.md"' in html and 'data-file="people/jane.md"' not in html
    htmx = client_for(cast.member).get(f"/memory/{team_fs.pk}/", {"q": "jane"}, HTTP_HX_REQUEST="true")
    assert b"<html" not in htmx.content and b'data-file="people/jane.md"' in htmx.content


def test_file_page_renders_markdown(cast, team_fs):
    page = client_for(cast.member).get(f"/memory/{team_fs.pk}/files/people/jane.md")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<strong>Initech</strong>" in html and "<h1>Jane</h1>" in html
    assert f'href="/memory/{team_fs.pk}/edit/people/jane.md"' not in html  # members read only
    index = client_for(cast.member).get(f"/memory/{team_fs.pk}/files/index.md").content.decode()
    assert f'href="/memory/{team_fs.pk}/files/people/jane.md"' in index  # links between files work


def test_permissions_matrix(cast, team_fs):
    file_url = f"/memory/{team_fs.pk}/files/people/jane.md"
    edit_url = f"/memory/{team_fs.pk}/edit/people/jane.md"
    assert client_for(cast.admin).get(edit_url).status_code == 200
    assert client_for(cast.member).get(edit_url).status_code == 403
    assert client_for(cast.member).post(edit_url, {"content": "hacked", "base_version": 1}).status_code == 403
    for user in (cast.other_admin, cast.support):
        assert client_for(user).get(file_url).status_code == 404
        assert client_for(user).get(f"/memory/{team_fs.pk}/").status_code == 404
        assert client_for(user).post(edit_url, {"content": "x", "base_version": 1}).status_code == 404
    own = cast.member.memory_filesystem
    assert client_for(cast.member).get(f"/memory/{own.pk}/new").status_code == 200
    assert client_for(cast.admin).get(f"/memory/{own.pk}/").status_code == 404  # another user's memory
    assert MemoryFile.objects.get(filesystem=team_fs, path="people/jane.md").version == 1


def test_edit_without_javascript_preview_then_save(cast, team_fs):
    client = client_for(cast.admin)
    edit_url = f"/memory/{team_fs.pk}/edit/people/jane.md"
    preview = client.post(edit_url, {"content": "# Jane Park\n*CTO*", "base_version": 1, "preview": "1"})
    assert preview.status_code == 200 and b"<em>CTO</em>" in preview.content
    assert MemoryFile.objects.get(filesystem=team_fs, path="people/jane.md").version == 1
    saved = client.post(edit_url, {"content": "# Jane Park\n*CTO*", "base_version": 1, "save": "1"})
    assert saved.status_code == 302 and saved["Location"] == f"/memory/{team_fs.pk}/files/people/jane.md"
    stale = client.post(edit_url, {"content": "other", "base_version": 1, "save": "1"})
    assert stale.status_code == 409 and b"data-conflict" in stale.content and b"since you opened it" in stale.content
    assert b"other" in stale.content  # the text the person typed is kept for them


def test_htmx_preview_partial(cast, team_fs):
    response = client_for(cast.admin).post(f"/memory/{team_fs.pk}/preview", {"content": "**bold**"},
                                           HTTP_HX_REQUEST="true")
    assert response.content.decode().strip().startswith('<section id="preview"')
    assert b"<strong>bold</strong>" in response.content


def test_create_offers_the_index_line(cast, team_fs):
    client = client_for(cast.admin)
    refused = client.post(f"/memory/{team_fs.pk}/new", {"path": "orphan.md", "content": "x", "save": "1"})
    assert refused.status_code == 422 and b"not linked" in refused.content
    created = client.post(f"/memory/{team_fs.pk}/new", {"path": "customers/initech.md", "content": "Big.",
                                                        "add_to_index": "on", "description": "Our biggest customer",
                                                        "save": "1"})
    assert created.status_code == 302
    assert "customers/initech.md" in MemoryFile.objects.get(filesystem=team_fs, path="index.md").content
    bad = client.post(f"/memory/{team_fs.pk}/new", {"path": "../x.md", "content": "", "add_to_index": "on"})
    assert bad.status_code == 422 and b"Invalid path" in bad.content


def test_move_and_delete_pages(cast, team_fs):
    client = client_for(cast.admin)
    moved = client.post(f"/memory/{team_fs.pk}/move/people/jane.md", {"new_path": "people/jane-park.md",
                                                                        "base_version": 1, "update_links": "on"})
    assert moved.status_code == 302
    assert client.get(f"/memory/{team_fs.pk}/delete/people/jane-park.md").status_code == 200
    deleted = client.post(f"/memory/{team_fs.pk}/delete/people/jane-park.md", {"update_links": "on"})
    assert deleted.status_code == 302
    assert not MemoryFile.objects.filter(filesystem=team_fs, path__startswith="people/").exists()
    history = client.get(f"/memory/{team_fs.pk}/history/people/jane-park.md")
    assert history.status_code == 200 and b"Deleted" in history.content


def test_history_diff_and_revert(cast, team_fs):
    client = client_for(cast.admin)
    client.post(f"/memory/{team_fs.pk}/edit/people/jane.md", {"content": "# Jane\nCEO now.", "base_version": 1})
    history = client.get(f"/memory/{team_fs.pk}/history/people/jane.md").content.decode()
    assert '<span class="del">-CTO of **Initech**.</span>' in history
    assert '<span class="add">+CEO now.</span>' in history
    split = client.get(f"/memory/{team_fs.pk}/history/people/jane.md", {"view": "split"}).content.decode()
    assert 'class="diff split"' in split
    revision = team_fs.revisions.first()
    reverted = client.post(f"/memory/{team_fs.pk}/revisions/{revision.pk}/revert")
    assert reverted.status_code == 302
    assert MemoryFile.objects.get(filesystem=team_fs, path="people/jane.md").content == "# Jane\nCTO of **Initech**."
    assert client_for(cast.member).post(f"/memory/{team_fs.pk}/revisions/{revision.pk}/revert").status_code == 403
    assert client.get(f"/memory/{team_fs.pk}/revisions/").status_code == 200
    assert client.get(f"/memory/{team_fs.pk}/revisions/{revision.pk}/").status_code == 200


def test_settings_budgets(cast, team_fs):
    client = client_for(cast.admin)
    refused = client.post(f"/memory/{team_fs.pk}/settings", {"file_token_budget": "1", "always_loaded_token_budget": "5"})
    assert refused.status_code == 422
    ok = client.post(f"/memory/{team_fs.pk}/settings", {"file_token_budget": "500", "always_loaded_token_budget": "900"})
    assert ok.status_code == 302
    assert client_for(cast.member).post(f"/memory/{team_fs.pk}/settings",
                                        {"file_token_budget": "9", "always_loaded_token_budget": "9"}).status_code == 403


def test_context_page(cast, team_fs):
    html = client_for(cast.member).get("/memory/context/").content.decode()
    assert 'source=&quot;team:Acme&quot; path=&quot;index.md&quot;' in html and "conservative estimate" in html
