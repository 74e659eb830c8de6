"""What a memory page costs besides its own rows: the file system and its head revision in one
query, every cached fact of the page in one cache round trip, links built without a reverse()
per row -- and the same links and numbers as before."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory import selectors, services, views
from memory.services import Change
from tests.conftest import client_for
from tests.memory.factories import write_linked

pytestmark = pytest.mark.django_db


def _without_tokens(response) -> str:
    return re.sub(r'(csrfmiddlewaretoken" value=|"X-CSRFToken": )"[^"]+"', "", response.content.decode())

ODD_PATHS = ["people/jane park.md", "notes/50%.md", "a/b#c?.md", "école/été.md", "x/[y](z).md", "t/~a:b@c+d.md",
             "q/\"'<>&.md", "//lead.md"]


def test_listing_links_are_what_reverse_gives(cast):
    fs = cast.team.memory_filesystem
    file_url = views._path_urls("memory:file", fs)
    for path in ODD_PATHS + ["index.md"]:
        assert file_url(path) == reverse("memory:file", args=[fs.pk, path])
    revision_url = views._id_urls("memory:revision", fs)
    assert revision_url(42) == reverse("memory:revision", args=[fs.pk, 42])
    linked = ["école/été.md", "t/~a@c+d.md"]
    write_linked(fs, dict.fromkeys(linked, "x"))
    html = client_for(cast.member).get(f"/memory/{fs.pk}/?q=.md").content.decode()
    for path in linked:
        assert f'href="{reverse("memory:file", args=[fs.pk, path])}"' in html


def test_the_head_revision_comes_with_the_file_system(cast):
    fs = cast.team.memory_filesystem
    newest = write_linked(fs, {"a.md": "a"})
    selectors.facts(selectors.filesystem_get(cast.member, fs.pk), selectors.VERDICT)  # the verdict, cached
    with CaptureQueriesContext(connection) as captured:
        loaded = selectors.filesystem_get(cast.member, fs.pk)
        assert selectors.facts(loaded, selectors.VERDICT) == [[]]  # keyed by the head: no query of its own
    assert len(captured) == 1 and "memory_revision" in captured[0]["sql"]
    assert loaded._head_revision.startswith(f"{newest.pk}@")


def test_a_write_through_the_same_instance_moves_its_facts_to_the_new_head(cast):
    fs = selectors.filesystem_get(cast.member, cast.member.memory_filesystem.pk)
    write_linked(fs, {"a.md": "a"})
    assert selectors.totals(fs)["files"] == 2
    services.changes_apply(filesystem=fs, changes=[Change("delete", "a.md"),
                                                   Change("write", "index.md", content="# Index\n")],
                           author_kind="person", author=cast.member)
    assert selectors.totals(fs)["files"] == 1


@pytest.mark.parametrize("suffix", ["/?q=file", "/?dir=people/&page=2", "/history/people/f0.md", "/revisions/"])
def test_a_page_reads_its_cached_facts_in_one_round_trip(cast, monkeypatch, django_assert_max_num_queries, suffix):
    fs = cast.team.memory_filesystem
    write_linked(fs, {f"people/f{n}.md": f"file {n}" for n in range(60)})
    for n in range(12):
        services.changes_apply(filesystem=fs, changes=[Change("write", "people/f0.md", content=f"edit {n}")],
                               author_kind="memory_agent")
    client = client_for(cast.admin)
    url = f"/memory/{fs.pk}{suffix}"
    first = client.get(url)
    assert first.status_code == 200
    reads = []
    for name in ("get", "get_many"):
        real = getattr(cache, name)
        monkeypatch.setattr(cache, name, lambda *a, real=real, name=name, **k: reads.append(name) or real(*a, **k))
    with django_assert_max_num_queries(7):  # session, user, roles, file system + head, rows, diff texts or counts, badge
        again = client.get(url)
    assert again.status_code == 200 and _without_tokens(again) == _without_tokens(first)
    # The verdict and the page's counts in one read; the history's diffs in a second.
    assert reads == (["get_many", "get_many"] if "/history/" in suffix else ["get_many"])
