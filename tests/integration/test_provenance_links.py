"""Memory pages lead to hydration's provenance: from a revision a run wrote, and from any file."""

import pytest
from django.utils import timezone

from hydration import services as hydration
from lindy import services as lindy_services
from memory import services as memory
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_revision_written_by_a_run_links_to_its_source_items(cast):
    lindy_services.meeting_create(
        team=cast.team, owner=cast.admin, title="All-hands", public=True, occurred_at=timezone.now(),
        notes="We always deploy to staging before prod. Initech is our biggest customer.",
    )
    fs = memory.filesystem_for_team(cast.team)
    run = hydration.run_now_sync(filesystem=fs, user=cast.admin)
    assert run.revision_id, run.status
    client = client_for(cast.member)
    page = client.get(f"/memory/{fs.pk}/revisions/{run.revision_id}/").content.decode()
    assert f'href="/hydration/runs/{run.pk}/"' in page
    why = f"/hydration/{fs.pk}/revisions/{run.revision_id}/why"
    assert f'href="{why}"' in page
    assert "We always deploy to staging" in client.get(why).content.decode()
    file_page = client.get(f"/memory/{fs.pk}/files/index.md").content.decode()
    assert f'href="/hydration/{fs.pk}/why/index.md"' in file_page and f'href="/hydration/{fs.pk}/"' in file_page
