"""A real Celery worker runs a hydration that Run now queued."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from hydration import services
from hydration.models import Run
from lindy import services as core
from memory.models import MemoryFile

from .helpers import user_fs


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_hydrates_a_queued_run(cast, celery_worker_process):
    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    fs = user_fs(cast.member)
    celery_worker_process.start()
    run, created = services.run_trigger(filesystem=fs, trigger="manual", user=cast.member)
    assert created
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if not run.is_active:
            break
        time.sleep(0.3)
    assert run.status == Run.Status.SUCCEEDED, (run.status, run.error, celery_worker_process.log())
    assert "We always deploy to staging before prod." in MemoryFile.objects.get(filesystem=fs, path="procedures.md").content
    celery_worker_process.stop()
