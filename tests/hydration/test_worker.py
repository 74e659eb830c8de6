"""A real Celery worker runs a hydration that Run now queued."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from hydration import services
from hydration.models import Run
from lindy import services as core
from memory.models import MemoryFile
from tests.waiting import wait_until

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
    wait_until(lambda: not Run.objects.get(pk=run.pk).is_active, what=celery_worker_process.log)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, (run.status, run.error, celery_worker_process.log())
    assert "We always deploy to staging before prod." in MemoryFile.objects.get(filesystem=fs, path="procedures.md").content
    celery_worker_process.stop()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_run_leaves_no_revision_and_the_next_run_takes_over(cast, celery_worker_process,
                                                                               monkeypatch):
    from datetime import timedelta

    from hydration.models import Item
    from memory.models import Revision
    from tests.fakes.anthropic_api import FakeAnthropic
    from tests.fakes.http import Reply

    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    fs = user_fs(cast.member)
    with FakeAnthropic() as fake:
        # The summarizer takes its time: long enough to kill the worker while it waits.
        fake.script("POST", "/v1/messages", [Reply(500, {"type": "error"}, delay=30)])
        monkeypatch.setenv("ANTHROPIC_API_KEY", fake.API_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("LINDY_MODEL_OFFLINE", "0")
        celery_worker_process.start()
        run, _ = services.run_trigger(filesystem=fs, trigger="manual", user=cast.member)
        wait_until(lambda: fake.message_requests, what=celery_worker_process.log)
        run.refresh_from_db()
        assert run.status == Run.Status.RUNNING and run.stage.startswith("Summarizing")
        celery_worker_process.kill()

    assert not Revision.objects.filter(filesystem=fs, source_kind="hydration_run").exists()
    assert Item.objects.filter(filesystem=fs).count() == 1  # stored before anything else
    Run.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    second = services.run_now_sync(filesystem=fs, trigger="manual")
    assert second.status == Run.Status.SUCCEEDED and second.item_count == 1
    run.refresh_from_db()
    assert run.status == Run.Status.INTERRUPTED
    assert Item.objects.filter(filesystem=fs).count() == 1
    assert Revision.objects.filter(filesystem=fs, source_kind="hydration_run").count() == 1


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_whole_worker_killed_mid_run_is_resumed_by_the_next_worker_within_a_minute(cast, celery_worker_process,
                                                                                     monkeypatch):
    """SIGKILL to the whole worker: its message stays unacknowledged for the broker's 1 h
    visibility timeout. The heartbeat goes quiet, the recovery sweep (a beat entry; queued here by
    hand, as beat would) queues the run again, and a new worker finishes it: one whole revision."""
    from hydration.models import Item
    from lindy import queue
    from memory.models import Revision
    from tests.fakes.anthropic_api import FakeAnthropic
    from tests.fakes.http import Reply

    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    fs = user_fs(cast.member)
    monkeypatch.setenv("HYDRATION_HEARTBEAT_SECONDS", "0.5")
    monkeypatch.setenv("HYDRATION_HEARTBEAT_STALE_SECONDS", "3")
    with FakeAnthropic() as fake:
        # The summarizer takes its time: long enough to kill the worker while it waits.
        fake.script("POST", "/v1/messages", [Reply(500, {"type": "error"}, delay=30)])
        monkeypatch.setenv("ANTHROPIC_API_KEY", fake.API_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("LINDY_MODEL_OFFLINE", "0")
        celery_worker_process.start()
        run, _ = services.run_trigger(filesystem=fs, trigger="manual", user=cast.member)
        wait_until(lambda: fake.message_requests, what=celery_worker_process.log)
        # A beat while the model call hangs: the heartbeat moves on by itself.
        wait_until(lambda: Run.objects.filter(pk=run.pk, heartbeat_at__gt=F("started_at")).exists(),
                   what="a heartbeat while the model call hangs")
        run.refresh_from_db()
        assert run.status == Run.Status.RUNNING and run.stage.startswith("Summarizing")
        assert run.lease_task_id and run.lease_holder and run.heartbeat_at > run.started_at
        celery_worker_process.kill()

    # The heartbeat goes stale (3 s without a beat).
    wait_until(lambda: timezone.now() - Run.objects.get(pk=run.pk).heartbeat_at > timedelta(seconds=3.5),
               what="the heartbeat went stale")
    assert not Revision.objects.filter(filesystem=fs, source_kind="hydration_run").exists()
    monkeypatch.setenv("LINDY_MODEL_OFFLINE", "1")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    celery_worker_process.start()
    queue.enqueue("hydration.tasks.recover")  # what beat does every 15 s
    wait_until(lambda: not Run.objects.get(pk=run.pk).is_active, what=celery_worker_process.log)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, (run.status, run.stage, run.error, celery_worker_process.log())
    # Resumed by the sweep's re-queue (not the broker's 1 h visibility timeout): how soon is the
    # arithmetic of the stale window and the sweep period (README), not this machine's speed.
    assert run.attempts == 2
    revisions = Revision.objects.filter(filesystem=fs, source_kind="hydration_run")
    assert revisions.count() == 1 and run.revision_id == revisions.get().pk
    assert "We always deploy to staging before prod." in MemoryFile.objects.get(filesystem=fs,
                                                                                  path="procedures.md").content
    assert not Item.objects.filter(filesystem=fs, processed_by__isnull=True).exists()
    celery_worker_process.stop()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_child_killed_mid_run_is_taken_over_by_its_redelivery_at_once(cast, celery_worker_process,
                                                                              monkeypatch):
    """SIGKILL to the child running the task: Celery redelivers the same task at once. Its task id
    is the lease's, so it takes the run over now, not when the 30-minute lease passes (no sweep),
    and writes one whole revision."""
    import os
    import signal

    from memory.models import Revision
    from tests.fakes.anthropic_api import FakeAnthropic, message, tool_use_block
    from tests.fakes.http import Reply

    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    fs = user_fs(cast.member)

    def summary(recorded):
        ids = [int(i) for i in re.findall(r'<item id="(\d+)"', recorded.json["messages"][0]["content"])]
        facts = [{"kind": "procedural", "text": "We always deploy to staging before prod.", "item_ids": ids}]
        return Reply(200, message([tool_use_block("record_facts", {"facts": facts})]))

    with FakeAnthropic() as fake:
        # The first summarizer call hangs: the child is killed in it. The redelivery gets answers.
        fake.script("POST", "/v1/messages", [Reply(500, {"type": "error"}, delay=30), summary])
        fake.reply([tool_use_block("create_file", {"path": "procedures.md", "sources": [],
                                                   "content": "# Procedures\n\n- We always deploy to staging before prod.\n"}),
                    tool_use_block("update_file", {"path": "index.md",
                                                   "content": "- [procedures.md](procedures.md) — how we work\n"})])
        fake.reply_text("Done.")
        monkeypatch.setenv("ANTHROPIC_API_KEY", fake.API_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("LINDY_MODEL_OFFLINE", "0")
        celery_worker_process.start("--pool=prefork", "--concurrency=1")
        run, _ = services.run_trigger(filesystem=fs, trigger="manual", user=cast.member)
        wait_until(lambda: fake.message_requests, what=celery_worker_process.log)
        run.refresh_from_db()
        assert run.status == Run.Status.RUNNING and run.lease_task_id
        child = int(run.lease_holder.rsplit(":", 1)[1])
        assert child != celery_worker_process.proc.pid  # the pool's child, not the worker
        first_task = run.lease_task_id
        os.kill(child, signal.SIGKILL)
        wait_until(lambda: not Run.objects.get(pk=run.pk).is_active, what=celery_worker_process.log)
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, (run.status, run.stage, run.error, celery_worker_process.log())
    # Taken over by the redelivery of the same task (its id is the lease's), not after the 30-minute
    # lease and not by the sweep, which nothing ran here.
    assert run.attempts == 2 and run.lease_task_id == first_task
    revisions = Revision.objects.filter(filesystem=fs, source_kind="hydration_run")
    assert revisions.count() == 1 and run.revision_id == revisions.get().pk
    assert set(run.revision.changes.values_list("path", flat=True)) == {"procedures.md", "index.md"}
    celery_worker_process.stop()
