"""Hostile and out-of-range input to memory pages and the API: a clear 4xx, never a 500,
and nothing changed."""

from __future__ import annotations

import pytest

from memory import services
from memory.models import FileSystem, MemoryFile, Revision
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

HUGE = 2**63 + 5  # past every database's integer
BASE = "/api/memory/filesystems"


@pytest.fixture
def team_fs(cast):
    fs = services.filesystem_for_team(cast.team)
    services.file_write(filesystem=fs, path="people/jane.md", content="Jane", base_version=None,
                        author_kind="person", author=cast.admin, index_description="Jane")
    return fs


def _snapshot(fs):
    fs = FileSystem.objects.get(pk=fs.pk)
    return (Revision.objects.filter(filesystem=fs).count(),
            list(MemoryFile.objects.filter(filesystem=fs).values_list("path", "version")),
            fs.file_token_budget, fs.always_loaded_token_budget)


@pytest.mark.parametrize("method, suffix, data", [
    ("post", "/settings", {"file_token_budget": str(2**40), "always_loaded_token_budget": "5000"}),
    ("post", "/settings", {"file_token_budget": str(HUGE), "always_loaded_token_budget": "5000"}),
    ("post", "/settings", {"file_token_budget": "-3", "always_loaded_token_budget": "5000"}),
    ("get", f"/revisions/{HUGE}/", None),
    ("post", f"/revisions/{HUGE}/revert", {}),
    ("post", f"/changes/{HUGE}/restore", {}),
    ("post", "/edit/people/jane.md", {"content": "x", "base_version": str(HUGE)}),
    ("post", "/edit/people/jane.md", {"content": "x\x00", "base_version": "1"}),
    ("post", "/new", {"path": "../x.md", "content": "x"}),
    ("post", "/new", {"path": "y.md", "content": "x", "add_to_index": "on", "description": "d" * 10_000}),
    ("post", "/move/people/jane.md", {"new_path": "\x01.md"}),
    ("get", "/?dir=../", None),
    ("get", "/history/../x.md", None),
    ("get", "/files/a%00.md", None),
])
def test_pages_answer_4xx_and_change_nothing(cast, team_fs, method, suffix, data):
    before = _snapshot(team_fs)
    client = client_for(cast.admin)
    url = f"/memory/{team_fs.pk}{suffix}"
    response = client.get(url) if method == "get" else client.post(url, data)
    assert 400 <= response.status_code < 500, (suffix, response.status_code)
    assert _snapshot(team_fs) == before


@pytest.mark.parametrize("method, suffix, data", [
    ("get", f"/revisions?offset={HUGE}", None),
    ("get", "/revisions?offset=1000000001", None),
    ("get", "/revisions?limit=abc", None),
    ("put", "/files/people/jane.md", {"content": "x", "base_version": HUGE}),
    ("put", "/files/x.md", {"content": "x", "index_description": "d" * 301}),
    ("delete", f"/files/people/jane.md?base_version={HUGE}", None),
    ("post", "/moves", {"from": "people/jane.md", "to": "index.md"}),
])
def test_api_answers_4xx_and_changes_nothing(cast, api_for, team_fs, method, suffix, data):
    before = _snapshot(team_fs)
    api = api_for(cast.admin)
    url = f"{BASE}/{team_fs.pk}{suffix}"
    response = getattr(api, method)(url, data) if data is not None else getattr(api, method)(url)
    assert 400 <= response.status_code < 500, (suffix, response.status_code)
    assert "error" in response.json()
    assert _snapshot(team_fs) == before


def test_budgets_have_a_ceiling(team_fs):
    with pytest.raises(services.InvalidChange, match="at most"):
        services.budgets_update(filesystem=team_fs, file_tokens=services.MAX_BUDGET + 1, always_loaded_tokens=5000)
    fs = services.budgets_update(filesystem=team_fs, file_tokens=services.MAX_BUDGET, always_loaded_tokens=5000)
    assert fs.file_token_budget == services.MAX_BUDGET
