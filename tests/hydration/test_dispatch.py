"""The dispatch tick costs O(runs due): it reads due rows through the index on next_run_at,
starts each once, and two ticks at the same time never start the same run."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from hydration import scale, services
from hydration.models import Run, Schedule
from lindy.models import Team
from memory.models import FileSystem

INTERVAL = timedelta(hours=12)


def _tick_queries(now) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert services.schedule_dispatch(now=now) == []
    sql = [q["sql"] for q in ctx.captured_queries]
    # No scan over every file system (looking for ones without a slot grows with all of them).
    assert not any("memory_filesystem" in q for q in sql), sql
    return len(sql)


@pytest.mark.django_db
def test_a_tick_with_nothing_due_costs_the_same_for_few_or_many_file_systems():
    now = timezone.now()
    scale.schedules_insert(5, due_at=now + timedelta(hours=1), prefix="few")
    few = _tick_queries(now)
    scale.schedules_insert(400, due_at=now + timedelta(hours=1), prefix="many")
    many = _tick_queries(now)
    assert few == many <= 4  # expire stale runs, then one SELECT … FOR UPDATE SKIP LOCKED (plus its savepoint)
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_due_rows_start_once_and_move_one_interval_on(monkeypatch):
    monkeypatch.setattr("django.conf.settings.HYDRATION_DISPATCH_BATCH", 7)
    now = timezone.now()
    due = scale.schedules_insert(20, due_at=now - timedelta(minutes=5), prefix="due")
    later = scale.schedules_insert(5, due_at=now + timedelta(minutes=5), prefix="later")
    created = services.schedule_dispatch(now=now)
    assert len(created) == 20 == len(set(created))
    assert set(Run.objects.filter(pk__in=created).values_list("filesystem_id", flat=True)) == set(due)
    assert all(r.trigger == "schedule" and r.status == "queued" for r in Run.objects.all())
    slots = Schedule.objects.filter(filesystem_id__in=due).values_list("next_run_at", flat=True)
    assert all(now < slot <= now + INTERVAL for slot in slots)
    assert services.schedule_dispatch(now=now) == []  # nothing started twice
    assert not Run.objects.filter(filesystem_id__in=later).exists()


@pytest.mark.django_db
def test_a_file_system_with_a_live_run_is_skipped_and_a_missed_slot_is_not_replayed():
    now = timezone.now()
    busy, idle = scale.schedules_insert(2, due_at=now - 3 * INTERVAL - timedelta(minutes=1), prefix="b")
    live, _ = services.run_trigger(filesystem=FileSystem.objects.get(pk=busy), trigger="manual", enqueue=False)
    created = services.schedule_dispatch(now=now)
    assert Run.objects.get(pk=created[0]).filesystem_id == idle and len(created) == 1
    # Three missed slots are skipped: the next one is the first slot after now.
    next_at = Schedule.objects.get(filesystem_id=busy).next_run_at
    assert now < next_at <= now + INTERVAL
    assert Run.objects.filter(filesystem_id=busy).count() == 1


@pytest.mark.django_db
def test_a_new_file_system_gets_its_slot_and_the_backfill_catches_bulk_created_ones():
    fs = FileSystem.objects.get(team=Team.objects.create(name="Fresh"))  # created with its team
    slot = Schedule.objects.get(filesystem=fs).next_run_at
    assert timezone.now() < slot <= timezone.now() + INTERVAL
    team = Team.objects.bulk_create([Team(name="Bulk")])[0]
    bulk = FileSystem.objects.bulk_create([FileSystem(kind="team", team=team)])
    assert not Schedule.objects.filter(filesystem=bulk[0]).exists()
    assert services.schedules_backfill() == 1
    assert Schedule.objects.filter(filesystem=bulk[0]).exists()


@pytest.mark.django_db(transaction=True)
def test_two_ticks_at_once_never_start_the_same_run(settings):
    settings.HYDRATION_DISPATCH_BATCH = 5
    now = timezone.now()
    due = scale.schedules_insert(60, due_at=now - timedelta(minutes=1), prefix="race")
    start = threading.Barrier(2)
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def tick():
        try:
            start.wait()
            results.append(services.schedule_dispatch(now=now))
        except BaseException as exc:  # noqa: BLE001 — reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=tick) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    started = results[0] + results[1]
    assert len(started) == 60 == len(set(started)) == Run.objects.count()
    assert set(Run.objects.values_list("filesystem_id", flat=True)) == set(due)
    # Each row advanced exactly once: one interval after its due time.
    assert all(s.next_run_at == now - timedelta(minutes=1) + INTERVAL for s in Schedule.objects.all())
