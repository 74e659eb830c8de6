"""Memory pages at scale: search through the trigram indexes, counts that don't cost a COUNT per
page (kept per revision, or capped past the page for search), diffs rendered once per change."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import diffs, selectors, services, views
from memory.models import FileSystem
from memory.services import Change
from tests.conftest import client_for
from tests.memory.factories import write_linked


def _page(client, url) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _files_shown(html: str) -> list[str]:
    return re.findall(r'<tr data-file="([^"]+)"', html)


def _build(fs, count: int) -> None:
    """`count` files linked half from index.md, half from master.md (each stays under the file size limit)."""
    FileSystem.objects.filter(pk=fs.pk).update(always_loaded_token_budget=services.MAX_BUDGET)
    fs.refresh_from_db()
    paths = [f"folder{n % 8}/file-{n:05d}.md" for n in range(count)]
    index = fs.files.get(path="index.md")
    changes = [Change("create", path, content=f"# File {n}\n\nJane Park is Initech's CTO.\n")
               for n, path in enumerate(paths)]
    changes += [Change("update", "index.md", base_version=index.version,
                       content=index.content + "".join(f"- [{p}]({p})\n" for p in paths[::2])),
                Change("create", "master.md", content="".join(f"- [{p}]({p})\n" for p in paths[1::2]))]
    services.changes_apply(filesystem=fs, changes=changes, author_kind="system")


@pytest.mark.django_db
def test_search_at_scale_reads_the_trigram_indexes_not_every_file(cast):
    if connection.vendor != "postgresql":
        pytest.skip("trigram indexes are PostgreSQL's")
    fs = cast.team.memory_filesystem
    _build(fs, 5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memoryfile")  # what autovacuum does after a bulk write
    plan = selectors.search(fs, "file-0421")[:50].explain()
    assert "memory_file_fs_path_trgm" in plan and "memory_file_fs_content_trgm" in plan, plan
    assert "Seq Scan" not in plan, plan
    found = [f.path for f in selectors.search(fs, "FILE-0421")]
    assert found == sorted(found) and len(found) == 12  # ten paths, and index and master that link them
    assert {"index.md", "master.md"} <= set(found)


def test_search_lists_matches_by_path_with_their_number_in_any_case(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"b/kiwi-notes.md": "x", "a/fruit.md": "We buy KIWIS on Friday.", "c/other.md": "nothing",
                      "d/percent.md": "50% off"})
    client = client_for(cast.member)
    html = _page(client, f"/memory/{fs.pk}/?q=Kiwi")
    assert _files_shown(html) == ["a/fruit.md", "b/kiwi-notes.md", "index.md"]  # the index links kiwi-notes.md
    assert 'data-results="3"' in html and "3 files for" in html
    # LIKE wildcards in the query are text: "%" finds the file with a percent sign only.
    assert _files_shown(_page(client, f"/memory/{fs.pk}/?q=%25")) == ["d/percent.md"]
    assert _files_shown(_page(client, f"/memory/{fs.pk}/?q=_")) == []


def test_search_count_stops_past_the_page_and_next_still_works(cast, monkeypatch):
    monkeypatch.setattr(views, "SEARCH_COUNT_AHEAD", 10)
    fs = cast.team.memory_filesystem
    write_linked(fs, {f"f{n:03}.md": "a match" for n in range(70)})
    client = client_for(cast.member)
    first = _page(client, f"/memory/{fs.pk}/?q=match")
    assert len(_files_shown(first)) == 50 and "Page 1 of 2+" in first and 'data-results="60+"' in first
    assert 'href="?q=match&page=2"' in first
    second = _page(client, f"/memory/{fs.pk}/?q=match&page=2")
    assert _files_shown(second) == [f"f{n:03}.md" for n in range(50, 70)]
    assert "Page 2 of 2</span>" in second and 'data-results="70"' in second
    with CaptureQueriesContext(connection) as captured:  # the count is kept per revision
        assert 'data-results="70"' in _page(client, f"/memory/{fs.pk}/?q=match&page=2")
    assert not [q["sql"] for q in captured if "COUNT(" in q["sql"] and "memory_memoryfile" in q["sql"]]
    write_linked(fs, {"f070.md": "one more match"})  # a new revision: counted again
    assert 'data-results="71"' in _page(client, f"/memory/{fs.pk}/?q=match&page=2")


def test_tree_pages_take_their_count_from_the_revision_not_a_count_query(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {f"people/p{n:03}.md": "x" for n in range(120)})
    client = client_for(cast.member)
    url = f"/memory/{fs.pk}/?dir=people/&page=3"
    assert "Page 3 of 3" in _page(client, url)
    with CaptureQueriesContext(connection) as captured:
        third = _page(client, url)
    assert _files_shown(third) == [f"people/p{n:03}.md" for n in range(100, 120)]
    assert not [q["sql"] for q in captured if "COUNT(" in q["sql"] and "memory_memoryfile" in q["sql"]]
    assert 'href="?dir=people/&page=2"' in third and "Next" not in third
    write_linked(fs, {"people/p120.md": "x"})  # a new revision: the count follows it
    assert 'data-file="people/p120.md"' in _page(client, url)


def test_file_history_diffs_are_rendered_once_per_change(cast, monkeypatch):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "Jane\n"})
    for n in range(3):
        services.changes_apply(filesystem=fs, changes=[Change("write", "people/jane.md", content=f"Jane\nEdit {n}\n")],
                               author_kind="memory_agent")
    calls = []
    for name in ("unified", "side_by_side"):
        real = getattr(diffs, name)
        monkeypatch.setattr(diffs, name, lambda before, after, real=real, name=name: calls.append(name) or real(before, after))
    client = client_for(cast.member)
    url = f"/memory/{fs.pk}/history/people/jane.md"
    html = _page(client, url)
    assert calls == ["unified"] * 4
    assert '<span class="add">+Edit 2</span>' in html and '<span class="del">-Edit 1</span>' in html
    again = _page(client, url)
    assert calls == ["unified"] * 4  # from the cache, the same diffs
    assert re.findall(r'<pre class="diff.*?</pre>', again, re.S) == re.findall(r'<pre class="diff.*?</pre>', html, re.S)
    split = _page(client, url + "?view=split")
    assert calls.count("side_by_side") == 4 and '<table class="diff split">' in split
    assert "Page 1 of 1" not in html  # one page: no pagination
    change = fs.changes.filter(path="people/jane.md").order_by("-pk").first()
    admin = _page(client_for(cast.admin), url)  # who may edit sees revert and restore forms on each change
    assert f'<a href="/memory/{fs.pk}/revisions/{change.revision_id}/">revision {change.revision_id}</a>' in admin
    # Revert on a file's history undoes that file's change only (issue 35); the revision's page reverts it whole.
    assert f'action="/memory/{fs.pk}/changes/{change.pk}/revert"' in admin
    assert f'action="/memory/{fs.pk}/revisions/{change.revision_id}/revert"' not in admin
    assert f'action="/memory/{fs.pk}/changes/{change.pk}/restore"' in admin


def test_file_history_pages_by_ten_with_a_count_kept_per_revision(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"notes/a.md": "0"})
    for n in range(1, 12):
        services.changes_apply(filesystem=fs, changes=[Change("write", "notes/a.md", content=f"{n}")],
                               author_kind="memory_agent")
    client = client_for(cast.member)
    first = _page(client, f"/memory/{fs.pk}/history/notes/a.md")
    assert first.count('<article class="change"') == 10 and "Page 1 of 2" in first
    second = _page(client, f"/memory/{fs.pk}/history/notes/a.md?view=unified&page=2")
    assert second.count('<article class="change"') == 2 and "Page 2 of 2" in second


def test_revision_list_shows_how_many_files_each_revision_changed(cast):
    fs = cast.team.memory_filesystem
    big = write_linked(fs, {"a.md": "a", "b.md": "b", "c.md": "c"})  # three files and the index
    small = services.changes_apply(filesystem=fs, changes=[Change("write", "a.md", content="A")], author_kind="system")
    for n in range(10):
        services.changes_apply(filesystem=fs, changes=[Change("write", "b.md", content=f"{n}")], author_kind="system")
    client = client_for(cast.member)
    first = _page(client, f"/memory/{fs.pk}/revisions/")
    assert "Page 1 of 2" in first and first.count("<tr data-revision=") == 10
    second = _page(client, f"/memory/{fs.pk}/revisions/?page=2")
    row = re.search(rf'<tr data-revision="{big.pk}">.*?</tr>', second, re.S).group(0)
    assert "<td>4</td>" in row
    row = re.search(rf'<tr data-revision="{small.pk}">.*?</tr>', second, re.S).group(0)
    assert "<td>1</td>" in row


def test_file_history_says_whether_the_file_is_still_there(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"a.md": "a", "b.md": "b"})
    client = client_for(cast.admin)
    assert "View the file" in _page(client, f"/memory/{fs.pk}/history/a.md")
    services.file_move(filesystem=fs, path="a.md", new_path="c.md", base_version=None, author_kind="person",
                       author=cast.admin, update_links=True)
    assert "View the file" not in _page(client, f"/memory/{fs.pk}/history/a.md")
    assert "View the file" in _page(client, f"/memory/{fs.pk}/history/c.md")
    services.file_delete(filesystem=fs, path="b.md", base_version=None, author_kind="person", author=cast.admin,
                         update_links=True)
    assert "View the file" not in _page(client, f"/memory/{fs.pk}/history/b.md")
