"""The memory API's lists are paged with the project's bounds (lindy/pagination.py): a file
system of thousands of files answers `limit` files at a time, never the whole tree at once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lindy.pagination import MAX_LIMIT, MAX_OFFSET
from memory.models import MemoryFile
from tests.memory.factories import write_linked

pytestmark = pytest.mark.django_db

BASE = "/api/memory/filesystems"


@pytest.fixture
def team_fs(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {f"people/p{n:02}.md": f"# Person {n}" for n in range(12)})
    return fs


def _paths(fs) -> list[str]:
    return list(MemoryFile.objects.filter(filesystem=fs).order_by("path").values_list("path", flat=True))


def test_files_are_paged_in_path_order_with_a_count(cast, api_for, team_fs):
    api = api_for(cast.member)
    every = _paths(team_fs)
    assert len(every) == 13  # index.md and twelve people
    first = api.get(f"{BASE}/{team_fs.pk}/files", limit=5).json()
    assert first["count"] == 13 and [f["path"] for f in first["items"]] == every[:5]
    rest = api.get(f"{BASE}/{team_fs.pk}/files", limit=5, offset=10).json()
    assert [f["path"] for f in rest["items"]] == every[10:]
    default = api.get(f"{BASE}/{team_fs.pk}/files").json()
    assert [f["path"] for f in default["items"]] == every and "content" not in default["items"][0]


def test_a_page_costs_the_same_queries_however_many_files(cast, api_for, team_fs, django_assert_max_num_queries):
    api = api_for(cast.member)
    with CaptureQueriesContext(connection) as few:
        assert api.get(f"{BASE}/{team_fs.pk}/files", limit=MAX_LIMIT).status_code == 200
    write_linked(team_fs, {f"bulk/f{n:03}.md": f"# File {n}" for n in range(150)})
    with django_assert_max_num_queries(len(few)):
        body = api.get(f"{BASE}/{team_fs.pk}/files", limit=MAX_LIMIT).json()
    assert len(body["items"]) == MAX_LIMIT and body["count"] == 163


@pytest.mark.parametrize("params", [
    {"limit": 0}, {"limit": MAX_LIMIT + 1}, {"limit": -1}, {"limit": "abc"}, {"limit": 10**20},
    {"offset": -1}, {"offset": MAX_OFFSET + 1}, {"offset": 2**63 + 5}, {"offset": "1e3"},
])
def test_bad_paging_is_422(cast, api_for, team_fs, params):
    response = api_for(cast.member).get(f"{BASE}/{team_fs.pk}/files", **params)
    assert response.status_code == 422, (params, response.content)


def test_another_tenants_file_system_is_404(cast, api_for, team_fs):
    other = api_for(cast.other_admin)
    assert other.get(f"{BASE}/{team_fs.pk}/files").status_code == 404
    assert other.get(f"{BASE}/{team_fs.pk}/files", limit=5, offset=5).status_code == 404
    assert other.get(f"{BASE}/{cast.member.memory_filesystem.pk}/files").status_code == 404
    assert api_for(cast.support).get(f"{BASE}/{team_fs.pk}/files").status_code == 404
    assert other.get(f"{BASE}/{2**63 + 5}/files").status_code == 404


def test_file_systems_list_is_paged(cast, api_for, team_fs):
    api = api_for(cast.member)
    body = api.get(BASE).json()
    assert body["count"] == 2 and {fs["label"] for fs in body["items"]} == {"team:Acme", f"user:{cast.member.email}"}
    assert len(api.get(BASE, limit=1).json()["items"]) == 1
    assert api.get(BASE, limit=MAX_LIMIT + 1).status_code == 422
    assert api_for(cast.support).get(BASE).json() == {"items": [], "count": 0}
