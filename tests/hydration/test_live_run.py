"""The run page follows a live run: one partial holds every part that changes (status, sources,
items, the revision and its diff); it stops polling when the run ends; and in Chromium, Run now
is followed to a written revision by a real Celery worker."""

from __future__ import annotations

import pytest
from django.utils import timezone

from hydration import services, tasks
from hydration.models import Run
from lindy import services as core
from tests.conftest import client_for
from tests.factories import PASSWORD
from tests.fixtures.live_browser import login

from .helpers import team_fs, user_fs

NOTES = "We always deploy to staging before prod. Jane Park joined as our CTO."


def _meeting(cast):
    return core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                               notes=NOTES)


def _live(client, run, **params):
    query = "&".join(f"{k}={v}" for k, v in {"part": "live", **params}.items())
    return client.get(f"/hydration/runs/{run.pk}/?{query}", HTTP_HX_REQUEST="true")


@pytest.mark.django_db
def test_the_live_partial_of_a_run_that_wrote_a_revision_shows_every_part(cast, monkeypatch,
                                                                         django_assert_max_num_queries):
    monkeypatch.setattr(tasks.hydrate, "apply_async", lambda args=(), kwargs=None, **_: None)
    _meeting(cast)
    fs = user_fs(cast.member)
    run, _ = services.run_trigger(filesystem=fs, trigger=Run.Trigger.MANUAL, user=cast.member)
    member = client_for(cast.member)
    queued = _live(member, run).content.decode()
    assert 'hx-trigger="every 2s"' in queued and 'data-status="queued"' in queued and "<html" not in queued
    assert "No source fetched yet." in queued

    services.run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED and run.revision_id
    with django_assert_max_num_queries(25):
        response = _live(member, run)
    body = response.content.decode()
    # The old partial lacked `fs`: a run with a revision raised NoReverseMatch here.
    assert response.status_code == 200
    assert f'href="/memory/{fs.pk}/revisions/{run.revision_id}/"' in body
    assert "every 2s" not in body and 'data-live="off"' in body
    assert "No source fetched yet." not in body and 'data-source="meetings"' in body
    assert 'data-change="procedures.md"' in body and "staging before prod" in body
    assert 'data-item="' in body
    # The old name of the partial still answers (pages opened before a deploy keep polling it).
    assert 'data-change="procedures.md"' in _live(member, run, part="progress").content.decode()
    # The split view and the item page stay in the poll URL of an active run's page.
    split = _live(member, run, view="split").content.decode()
    assert 'data-change="procedures.md"' in split


@pytest.mark.django_db
def test_a_failed_run_stops_polling_and_shows_its_error(cast):
    fs = user_fs(cast.member)
    run = Run.objects.create(filesystem=fs, trigger=Run.Trigger.MANUAL, triggered_by=cast.member,
                             status=Run.Status.FAILED, error="The summarizer gave up.")
    body = _live(client_for(cast.member), run).content.decode()
    assert "every 2s" not in body and "The summarizer gave up." in body and 'data-status="failed"' in body


@pytest.mark.django_db
def test_another_teams_run_partial_is_404(cast):
    run = services.run_now_sync(filesystem=team_fs(cast.other_team), trigger="manual")
    assert _live(client_for(cast.member), run).status_code == 404


@pytest.mark.browser
@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [390, 1280])
def test_run_now_is_followed_to_a_written_revision_by_a_real_worker(cast, browser_page, celery_worker_process, width):
    _meeting(cast)
    fs = user_fs(cast.member)
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    login(page, cast.member.email, PASSWORD)
    page.goto(f"{page.live_server_url}/hydration/{fs.pk}/")
    page.click("button[data-run-now]")
    # No worker yet: the page shows the queued run and polls.
    page.wait_for_selector('#run-live[data-live="on"] #progress[data-status="queued"]')
    assert "No source fetched yet." in page.inner_text("#run-live")
    celery_worker_process.start()
    page.wait_for_selector('#run-live[data-live="off"] #progress[data-status="succeeded"]', timeout=60_000)
    run = Run.objects.get(filesystem=fs)
    assert run.revision_id, celery_worker_process.log()
    live = page.locator("#run-live")
    assert live.locator(f'a[href="/memory/{fs.pk}/revisions/{run.revision_id}/"]').count() == 1
    assert "No source fetched yet." not in live.inner_text()
    assert live.locator('tr[data-source="meetings"]').count() == 1
    assert live.locator('article[data-change="procedures.md"]').count() == 1
    assert live.locator("li[data-item]").count() >= 1
    # Polling stopped: nothing on the page asks again.
    assert page.locator("[hx-trigger]").count() == 0
