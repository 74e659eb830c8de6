"""A file page's HTML is rendered once per text and then read from the cache: an index of
thousands of links is read far more often than it is written. Any edit is a new text, so the
page never shows HTML of an older version, and a cache outage costs speed, never the page."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import override_settings

from memory import rendering, services
from tests.conftest import client_for
from tests.memory.factories import write_linked

pytestmark = pytest.mark.django_db


@pytest.fixture
def renders(monkeypatch):
    calls: list[str] = []
    real = rendering.render_markdown

    def counting(text, **kwargs):
        calls.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(rendering, "render_markdown", counting)
    cache.clear()
    return calls


def test_a_file_page_renders_its_text_once_then_reads_the_cache(cast, renders):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "# Jane\nCTO of **Initech**.\n"})
    client = client_for(cast.member)
    first = client.get(f"/memory/{fs.pk}/files/people/jane.md").content.decode()
    second = client.get(f"/memory/{fs.pk}/files/people/jane.md").content.decode()
    assert "<strong>Initech</strong>" in first and "<strong>Initech</strong>" in second
    assert renders == ["# Jane\nCTO of **Initech**.\n"]


def test_an_edit_is_shown_at_once(cast, renders):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "Jane is the **CTO**.\n"})
    client = client_for(cast.member)
    assert "<strong>CTO</strong>" in client.get(f"/memory/{fs.pk}/files/people/jane.md").content.decode()
    jane = fs.files.get(path="people/jane.md")
    services.file_write(filesystem=fs, path="people/jane.md", content="Jane is the **CEO** now.\n",
                        base_version=jane.version, author_kind="person", author=cast.member)
    page = client.get(f"/memory/{fs.pk}/files/people/jane.md").content.decode()
    assert "<strong>CEO</strong>" in page and "CTO" not in page
    assert len(renders) == 2


def test_links_point_at_each_file_systems_own_pages(cast, renders):
    # The same text in two file systems: its links lead to each one's own pages, never the other's.
    text = "See [Jane](people/jane.md).\n"
    mine, theirs = cast.team.memory_filesystem, cast.member.memory_filesystem
    write_linked(mine, {"notes/a.md": text, "people/jane.md": "x"})
    write_linked(theirs, {"notes/a.md": text, "people/jane.md": "x"})
    client = client_for(cast.member)
    assert f'href="/memory/{mine.pk}/files/people/jane.md"' in client.get(
        f"/memory/{mine.pk}/files/notes/a.md").content.decode()
    assert f'href="/memory/{theirs.pk}/files/people/jane.md"' in client.get(
        f"/memory/{theirs.pk}/files/notes/a.md").content.decode()


def test_with_the_cache_down_the_page_still_renders(cast):
    fs = cast.team.memory_filesystem
    write_linked(fs, {"people/jane.md": "Jane is the **CTO**.\n"})
    down = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0",
                        "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    with override_settings(CACHES=down):
        response = client_for(cast.member).get(f"/memory/{fs.pk}/files/people/jane.md")
    assert response.status_code == 200
    assert "<strong>CTO</strong>" in response.content.decode()
