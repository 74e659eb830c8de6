"""Out-of-range input to hydration pages and the API: a clear 4xx, never a 500."""

from __future__ import annotations

import pytest

from hydration.models import Run, SourceState
from memory import services as memory_services
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

HUGE = 2**63 + 5


@pytest.mark.parametrize("suffix", [
    "/filesystems/{fs}/runs?offset=" + str(HUGE),
    "/filesystems/{fs}/runs?limit=0",
    "/runs/" + str(HUGE),
    "/runs/" + str(HUGE) + "/items",
])
def test_api_reads_answer_4xx(cast, api_for, suffix):
    fs = memory_services.filesystem_for_team(cast.team)
    response = api_for(cast.admin).get("/api/hydration" + suffix.format(fs=fs.pk))
    assert 400 <= response.status_code < 500 and "error" in response.json()


def test_api_writes_with_bad_bodies_change_nothing(cast, api_for):
    fs = memory_services.filesystem_for_team(cast.team)
    api = api_for(cast.admin)
    assert api.put(f"/api/hydration/filesystems/{fs.pk}/sources/tasks", raw="{bad").status_code == 400
    assert api.put(f"/api/hydration/filesystems/{fs.pk}/sources/tasks", {"enabled": "maybe"}).status_code == 422
    assert api.put(f"/api/hydration/filesystems/{fs.pk}/sources/gmail", {"enabled": False}).status_code == 404
    assert not SourceState.objects.filter(filesystem=fs, enabled=False).exists()


def test_pages_with_out_of_range_ids_are_404(cast):
    fs = memory_services.filesystem_for_team(cast.team)
    client = client_for(cast.admin)
    for url in (f"/hydration/runs/{HUGE}/", f"/hydration/{fs.pk}/revisions/{HUGE}/why", f"/hydration/{HUGE}/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/hydration/{fs.pk}/sources/nope", {"enabled": "on"}).status_code == 404
    assert client.get(f"/hydration/{fs.pk}/why/index.md?line={HUGE}").status_code == 200
    assert not Run.objects.exists()
