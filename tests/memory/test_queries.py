"""Pages cost a bounded number of queries, however many files and revisions there are."""

from __future__ import annotations

import pytest

from memory import services
from memory.services import Change
from tests.conftest import client_for
from tests.memory.factories import write_linked

MAX_QUERIES = 14


def build(fs, files: int, edits: int):
    write_linked(fs, {f"{folder}/f{n}.md": f"file {n}" for n in range(files) for folder in ("people", "deep/a")})
    for n in range(edits):
        services.changes_apply(filesystem=fs, changes=[Change("write", "people/f0.md", content=f"edit {n}")],
                               author_kind="memory_agent")


def pages(fs):
    return [
        "/memory/", f"/memory/{fs.pk}/", f"/memory/{fs.pk}/?dir=people/", f"/memory/{fs.pk}/?q=file",
        f"/memory/{fs.pk}/files/people/f0.md", f"/memory/{fs.pk}/history/people/f0.md",
        f"/memory/{fs.pk}/revisions/", f"/memory/{fs.pk}/revisions/{fs.revisions.first().pk}/",
        f"/memory/{fs.pk}/edit/people/f0.md", "/memory/context/",
        f"/api/memory/filesystems/{fs.pk}/verify", f"/api/memory/filesystems/{fs.pk}/revisions",
    ]


@pytest.mark.parametrize("files,edits", [(3, 2), (120, 40)])
def test_query_count_does_not_grow_with_files(cast, django_assert_max_num_queries, files, edits):
    fs = cast.team.memory_filesystem
    build(fs, files, edits)
    client = client_for(cast.admin)
    for url in pages(fs):
        with django_assert_max_num_queries(MAX_QUERIES):
            response = client.get(url)
        assert response.status_code == 200, url


def test_tree_is_paginated(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {f"f{n:03}.md": "x" for n in range(120)})
    client = client_for(cast.member)
    first = client.get(f"/memory/{fs.pk}/").content.decode()
    assert 'data-file="f000.md"' in first and 'data-file="f050.md"' not in first and "Page 1 of 3" in first
    third = client.get(f"/memory/{fs.pk}/?page=3").content.decode()
    assert 'data-file="f119.md"' in third


def test_query_counts_are_the_same_for_small_and_large_file_systems(cast):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from lindy.models import Team

    counts = []
    for files, edits, name in ((2, 1, "Small"), (80, 30, "Large")):
        team = Team.objects.create(name=name)
        cast.admin.memberships.create(team=team, role="admin")
        fs = team.memory_filesystem
        build(fs, files, edits)
        client = client_for(cast.admin)
        measured = {}
        for url in pages(fs):
            if url in ("/memory/", "/memory/context/"):
                continue
            with CaptureQueriesContext(connection) as captured:
                client.get(url)
            measured[url.replace(str(fs.pk), "ID").split("/revisions/")[0]] = len(captured)
        counts.append(measured)
    assert counts[0] == counts[1]
