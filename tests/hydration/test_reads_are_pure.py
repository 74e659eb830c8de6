"""A GET of a hydration page or endpoint writes nothing: source states a memory never stored
are computed for the page, and stored only by the write paths (a toggle, a run)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from hydration import selectors, services
from hydration.models import SourceState
from lindy import services as core
from tests.conftest import client_for

from .helpers import team_fs, user_fs

pytestmark = pytest.mark.django_db

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


def _writes(queries) -> list[str]:
    return [q["sql"] for q in queries if WRITE.match(q["sql"])]


def _get(client, url, **params):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, params)
    assert response.status_code == 200, url
    return _writes(ctx.captured_queries)


def test_pages_and_api_reads_write_nothing(cast):
    own, team = user_fs(cast.member), team_fs(cast.team)
    client = client_for(cast.member)
    urls = ["/hydration/", f"/hydration/{own.pk}/", f"/hydration/{team.pk}/",
            f"/api/hydration/filesystems/{own.pk}/sources", f"/api/hydration/filesystems/{team.pk}/sources"]
    # Before any source state is stored: the pages show the defaults and store nothing.
    assert not SourceState.objects.exists()
    for url in urls:
        assert _get(client, url) == [], url
    assert not SourceState.objects.exists()
    page = client.get(f"/hydration/{own.pk}/").content.decode()
    assert "Never run" in page and "Not connected." in page

    # After a run: the run, its provenance pages and the lists still only read.
    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    run = services.run_now_sync(filesystem=own, trigger="manual")
    assert run.status == "succeeded"
    urls += [f"/hydration/runs/{run.pk}/", f"/hydration/{own.pk}/revisions/{run.revision_id}/why",
             f"/hydration/{own.pk}/why/procedures.md", f"/api/hydration/runs/{run.pk}",
             f"/api/hydration/runs/{run.pk}/items", f"/api/hydration/filesystems/{own.pk}/runs"]
    for url in urls:
        assert _get(client, url) == [], url


def test_unsaved_states_match_what_a_write_path_stores(cast):
    own = user_fs(cast.member)
    computed = selectors.source_states(own)
    assert all(s.pk is None for s in computed) and not SourceState.objects.exists()
    stored = services.source_states_ensure(filesystem=own)
    assert [(s.source, s.enabled, s.status) for s in computed] == [(s.source, s.enabled, s.status) for s in stored]
    assert all(s.pk for s in stored)
    # Once stored, the read returns the stored rows (a source switched off stays off).
    services.source_set_enabled(filesystem=own, source="meetings", enabled=False)
    assert {s.source: s.enabled for s in selectors.source_states(own)}["meetings"] is False
