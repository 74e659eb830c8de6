"""index.md and master.md are special (always loaded, exempt from the per-file budget, never
deleted). A name that only looks like one of them — another script's letter, another case,
full-width letters, a space or an invisible character around it — is refused everywhere a path
enters: the service, the API and the pages; nothing is written."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from memory import services
from memory.models import MemoryFile, Revision
from memory.paths import PathError, clean_path, special_lookalike
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

LOOKALIKES = [
    "\u0456ndex.md",  # Cyrillic і
    "ind\u0435x.md",  # Cyrillic е
    "Index.md",
    "INDEX.md",
    "\uff49\uff4e\uff44\uff45\uff58.md",  # full-width ｉｎｄｅｘ
    "index.md ",
    " index.md",
    "index\u200b.md",  # zero-width space
    "\u200dindex.md",  # zero-width joiner
    "Master.md",
    "m\u0430ster.md",  # Cyrillic а
    "ma\u0455ter.md",  # Cyrillic ѕ
    "\u039cASTER.md",  # Greek capital Mu
]


@pytest.mark.parametrize("raw", LOOKALIKES)
def test_the_path_check_refuses_lookalikes(raw):
    assert special_lookalike(raw) in ("index.md", "master.md")
    with pytest.raises(PathError, match="looks like"):
        clean_path(raw)


@pytest.mark.parametrize("raw", ["index.md", "master.md", "people/index.md", "people/Index.md", "indexes.md",
                                 "notes.md", "Notes.md", "\u0456nfo.md"])
def test_the_special_names_themselves_and_other_names_pass(raw):
    assert special_lookalike(raw) is None
    assert clean_path(raw) == raw


def _state(fs):
    return Revision.objects.filter(filesystem=fs).count(), sorted(MemoryFile.objects.filter(filesystem=fs).values_list("path", flat=True))


@pytest.mark.parametrize("raw", LOOKALIKES)
def test_the_service_refuses_lookalikes(cast, raw):
    fs = services.filesystem_for_team(cast.team)
    before = _state(fs)
    with pytest.raises(services.MemoryWriteError, match="looks like"):
        services.file_write(filesystem=fs, path=raw, content="# Fake index", base_version=None,
                            author_kind="person", author=cast.admin)
    assert _state(fs) == before


@pytest.mark.parametrize("raw", LOOKALIKES)
def test_the_api_refuses_lookalikes(cast, api_for, raw):
    fs = services.filesystem_for_team(cast.team)
    before = _state(fs)
    response = api_for(cast.admin).put(f"/api/memory/filesystems/{fs.pk}/files/{quote(raw)}",
                                       {"content": "# Fake index", "index_description": "Fake"})
    assert response.status_code == 422, response.content
    assert "looks like" in response.json()["error"]["message"]
    assert _state(fs) == before


@pytest.mark.parametrize("raw", [r for r in LOOKALIKES if r == r.strip()])
def test_the_new_file_page_refuses_lookalikes(cast, raw):
    fs = services.filesystem_for_team(cast.team)
    before = _state(fs)
    response = client_for(cast.admin).post(f"/memory/{fs.pk}/new", {"path": raw, "content": "# Fake index",
                                                                   "add_to_index": "on", "description": "Fake"})
    assert response.status_code == 422
    assert "looks like" in response.content.decode()
    assert _state(fs) == before


def test_a_move_onto_a_lookalike_is_refused(cast, api_for):
    fs = services.filesystem_for_team(cast.team)
    services.file_write(filesystem=fs, path="people/jane.md", content="Jane", base_version=None,
                        author_kind="person", author=cast.admin, index_description="Jane")
    before = _state(fs)
    response = api_for(cast.admin).post(f"/api/memory/filesystems/{fs.pk}/moves",
                                        {"from": "people/jane.md", "to": "\u0456ndex.md"})
    assert response.status_code == 422
    assert _state(fs) == before
