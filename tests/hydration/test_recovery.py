"""Fast recovery: the lease names its holder (host:pid, Celery task id) and carries a heartbeat,
so a redelivered run takes over at once when its holder is dead, and a recovery sweep queues
again a run whose worker died whole (whose message would otherwise wait out the broker's 1 h
visibility timeout)."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from hydration import services
from hydration.models import Item, Run
from lindy import schedules
from lindy import services as core
from lindy.celery import app
from memory.models import Revision

from .helpers import user_fs


def _running(cast, *, task_id="task-1", heartbeat_age=0.0, attempts=1) -> Run:
    """A run a worker claimed and is working on (or was, until it died)."""
    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    fs = user_fs(cast.member)
    run, _ = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING, attempts=attempts, started_at=now - timedelta(seconds=heartbeat_age),
        lease_until=now + timedelta(minutes=30), lease_holder="worker-a:4242", lease_task_id=task_id,
        heartbeat_at=now - timedelta(seconds=heartbeat_age))
    return run


@pytest.mark.django_db
def test_a_redelivery_of_the_same_task_takes_over_at_once(cast):
    """A worker child killed mid-run: Celery redelivers the same task id at once. The lease is
    still 30 minutes long and the heartbeat fresh, but the holder is that very delivery: dead."""
    run = _running(cast, task_id="task-1")
    done = services.run_execute(run_id=run.pk, task_id="task-1")
    assert done is not None and done.status == Run.Status.SUCCEEDED
    assert done.attempts == 2
    assert Revision.objects.filter(filesystem=run.filesystem, source_kind="hydration_run").count() == 1


@pytest.mark.django_db
def test_another_delivery_leaves_a_live_holder_alone(cast):
    run = _running(cast, task_id="task-1", heartbeat_age=5)
    assert services.run_execute(run_id=run.pk, task_id="task-2") is None
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and run.attempts == 1 and run.lease_task_id == "task-1"


@pytest.mark.django_db
def test_a_stale_heartbeat_lets_any_delivery_take_over(cast):
    run = _running(cast, task_id="task-1", heartbeat_age=settings.HYDRATION_HEARTBEAT_STALE_SECONDS + 1)
    done = services.run_execute(run_id=run.pk, task_id="task-2")
    assert done is not None and done.status == Run.Status.SUCCEEDED and done.attempts == 2


@pytest.mark.django_db
def test_the_lease_records_its_holder_and_a_heartbeat(cast):
    fs = user_fs(cast.member)
    run, _ = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    before = timezone.now()
    done = services.run_execute(run_id=run.pk, task_id="celery-task-7")
    assert done.lease_holder == f"{socket.gethostname()}:{os.getpid()}"
    assert done.lease_task_id == "celery-task-7"
    assert done.heartbeat_at is not None and done.heartbeat_at >= before


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_beats_while_a_step_is_long(cast, monkeypatch):
    """A model call can take minutes with no stage change: a thread keeps the heartbeat fresh."""
    import time

    from hydration import summarizer

    real = summarizer.summarize
    beats = []

    def slow(*args, **kwargs):
        start = Run.objects.get(pk=run.pk).heartbeat_at
        time.sleep(1.5)
        beats.append((start, Run.objects.get(pk=run.pk).heartbeat_at))
        return real(*args, **kwargs)

    monkeypatch.setattr(summarizer, "summarize", slow)
    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    fs = user_fs(cast.member)
    run, _ = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    with override_settings(HYDRATION_HEARTBEAT_SECONDS=0.3):
        done = services.run_execute(run_id=run.pk, task_id="t")
    assert done.status == Run.Status.SUCCEEDED
    (start, later), = beats
    assert later > start


@pytest.mark.django_db(transaction=True)
def test_the_stage_shows_while_a_step_waits_and_costs_the_run_no_statement(cast, monkeypatch):
    """Progress (stage, usage) is written by the heartbeat thread as soon as it changes: a page
    shows "Summarizing" while the model call waits, and the pipeline itself spends no round trip
    on it (a burst of stage changes is one write, off the run's path)."""
    import time

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from hydration import summarizer

    real = summarizer.summarize
    seen = []

    def slow(*args, **kwargs):
        deadline = time.monotonic() + 5
        stage = ""
        while time.monotonic() < deadline and not stage.startswith("Summarizing"):
            time.sleep(0.02)
            stage = Run.objects.values_list("stage", flat=True).get(pk=run.pk)
        seen.append(stage)
        return real(*args, **kwargs)

    monkeypatch.setattr(summarizer, "summarize", slow)
    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    run, _ = services.run_trigger(filesystem=user_fs(cast.member), trigger="manual", enqueue=False)
    with CaptureQueriesContext(connection) as ctx:
        done = services.run_execute(run_id=run.pk, task_id="t")
    assert done.status == Run.Status.SUCCEEDED and done.stage == "Done"
    assert seen == ["Summarizing 1 item(s)"]
    stage_writes = [q["sql"] for q in ctx.captured_queries
                    if q["sql"].startswith('UPDATE "hydration_run"') and '"stage" =' in q["sql"]]
    assert len(stage_writes) == 2, stage_writes  # the claim's "Starting" and the finish's "Done"


@pytest.mark.django_db
def test_recover_queues_again_a_run_whose_worker_died_and_it_completes(cast, monkeypatch):
    run = _running(cast, heartbeat_age=settings.HYDRATION_HEARTBEAT_STALE_SECONDS + 5)
    live = _running_other(cast)
    app.conf.task_always_eager = True  # the queued task runs here, now
    try:
        assert services.runs_recover() == [run.pk]
    finally:
        app.conf.task_always_eager = False
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED and run.attempts == 2
    assert not Item.objects.filter(filesystem=run.filesystem, processed_by__isnull=True).exists()
    live.refresh_from_db()
    assert live.status == Run.Status.RUNNING and live.attempts == 1  # its worker is alive: left alone


def _running_other(cast) -> Run:
    fs = core_team_fs(cast)
    run, _ = services.run_trigger(filesystem=fs, trigger="manual", enqueue=False)
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, attempts=1, started_at=now,
                                         lease_until=now + timedelta(minutes=30), heartbeat_at=now)
    return run


def core_team_fs(cast):
    from .helpers import team_fs

    return team_fs(cast.team)


@pytest.mark.django_db
def test_recover_queues_a_dead_run_once_until_it_is_stale_again(cast):
    run = _running(cast, heartbeat_age=settings.HYDRATION_HEARTBEAT_STALE_SECONDS + 5)
    try:
        assert services.runs_recover() == [run.pk]
        assert services.runs_recover() == []  # queued already: the next tick does not queue it twice
        later = timezone.now() + timedelta(seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS + 1)
        assert services.runs_recover(now=later) == [run.pk]  # that message was lost too: again
    finally:
        with app.connection_for_write() as conn:
            conn.default_channel.queue_purge(settings.CELERY_TASK_DEFAULT_QUEUE)


@pytest.mark.django_db
def test_a_run_whose_workers_keep_dying_is_given_up(cast):
    run = _running(cast, heartbeat_age=settings.HYDRATION_HEARTBEAT_STALE_SECONDS + 5,
                   attempts=settings.HYDRATION_RUN_MAX_ATTEMPTS)
    assert services.runs_recover() == []
    run.refresh_from_db()
    assert run.status == Run.Status.INTERRUPTED and "attempts" in run.error
    assert services.run_execute(run_id=run.pk, task_id="task-1") is None
    # The next run starts afresh and takes in what the dead one never wrote.
    again = services.run_now_sync(filesystem=run.filesystem, trigger="manual")
    assert again.status == Run.Status.SUCCEEDED and again.item_count == 1


@pytest.mark.django_db
def test_the_recovery_sweep_is_a_beat_entry_every_minute_or_less():
    entry = {e.name: e for e in schedules.registered()}["hydration.recover"]
    assert entry.task == "hydration.tasks.recover" and entry.every_seconds <= 60
    assert PeriodicTask.objects.filter(name="hydration.recover", task="hydration.tasks.recover").exists()
    assert "hydration.tasks.recover" in app.tasks


@pytest.mark.django_db
def test_a_worker_whose_run_was_taken_over_marks_nothing(cast, monkeypatch):
    """Its heartbeat went quiet (say the database was out of reach), another delivery took the run
    over, then the first worker carried on: it finishes nothing and marks no item."""
    from hydration import summarizer

    def taken_over_meanwhile(items, **kwargs):
        Run.objects.filter(pk=run.pk).update(attempts=F("attempts") + 1, lease_task_id="task-2")
        return summarizer.Summary(facts=[], parts=1, calls=0)

    from django.db.models import F

    monkeypatch.setattr(summarizer, "summarize", taken_over_meanwhile)
    core.meeting_create(team=cast.team, owner=cast.member, title="Sync", occurred_at=timezone.now(),
                        notes="We always deploy to staging before prod.")
    run, _ = services.run_trigger(filesystem=user_fs(cast.member), trigger="manual", enqueue=False)
    services.run_execute(run_id=run.pk, task_id="task-1")
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and run.lease_task_id == "task-2"
    item = Item.objects.get(filesystem=run.filesystem)
    assert item.processed_by_id is None and item.processed_note == ""
