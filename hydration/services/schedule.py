"""When hydration runs: each file system's slot in the interval, and the dispatch tick that
starts the runs whose slot came."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.models import FileSystem

from ..models import Run, Schedule
from .runs import _lease, run_enqueue, runs_expire

Status = Run.Status

def _slot(fs_id: int, interval: int) -> int:
    """A stable offset within the interval for one file system, spreading runs evenly."""
    digest = hashlib.sha256(f"hydration:{fs_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % interval


def _first_due(fs_id: int, now, interval: int):
    epoch = int(now.timestamp())
    start = epoch - epoch % interval + _slot(fs_id, interval)
    if start <= epoch:
        start += interval
    return now + timedelta(seconds=start - epoch)


def schedules_backfill(*, now=None) -> int:
    """Give every file system without a schedule its slot. New file systems get theirs when they
    are created (hydration.signals); this sweep catches bulk-created ones. It scans every file
    system, so it runs on its own slow beat entry, never on the dispatch tick."""
    now = now or timezone.now()
    interval = settings.HYDRATION_INTERVAL_SECONDS
    missing = FileSystem.objects.filter(hydration_schedule__isnull=True).values_list("pk", flat=True)
    made = Schedule.objects.bulk_create([Schedule(filesystem_id=pk, next_run_at=_first_due(pk, now, interval))
                                         for pk in missing], ignore_conflicts=True)
    return len(made)


def schedule_ensure(*, filesystem_id: int, now=None) -> None:
    now = now or timezone.now()
    Schedule.objects.get_or_create(filesystem_id=filesystem_id, defaults={
        "next_run_at": _first_due(filesystem_id, now, settings.HYDRATION_INTERVAL_SECONDS)})


def schedule_dispatch(*, now=None, batch: int | None = None, max_batches: int | None = None) -> list[int]:
    """Start the run of every file system whose slot came; returns the runs created.

    Each batch reads only due rows through the index on next_run_at (so a tick costs O(runs due),
    not O(file systems)), locks them with SKIP LOCKED so a second tick running at the same time
    takes other rows instead of the same ones, advances them all in one UPDATE and creates the
    runs in one INSERT."""
    now = now or timezone.now()
    batch = batch or settings.HYDRATION_DISPATCH_BATCH
    max_batches = max_batches or settings.HYDRATION_DISPATCH_MAX_BATCHES
    runs_expire()
    created: list[int] = []
    for _ in range(max_batches):
        started, claimed = _dispatch_batch(now, batch)
        created += started
        if claimed < batch:
            break
    return created


def _next_slot(due_at, now, step: timedelta):
    missed = (now - due_at) // step + 1  # a slot missed while beat was down is skipped, not replayed
    return due_at + missed * step


def _dispatch_batch(now, batch: int) -> tuple[list[int], int]:
    """Returns (runs created, schedule rows claimed)."""
    step = timedelta(seconds=settings.HYDRATION_INTERVAL_SECONDS)
    with transaction.atomic():
        due = list(Schedule.objects.filter(next_run_at__lte=now).order_by("next_run_at")
                   .select_for_update(skip_locked=True).only("pk", "filesystem_id", "next_run_at")[:batch])
        if not due:
            return [], 0
        for schedule in due:
            schedule.next_run_at = _next_slot(schedule.next_run_at, now, step)
        Schedule.objects.bulk_update(due, ["next_run_at"])
        fs_ids = [schedule.filesystem_id for schedule in due]
        busy = set(Run.objects.filter(filesystem_id__in=fs_ids, status__in=Run.ACTIVE)
                   .values_list("filesystem_id", flat=True))
        runs = _runs_create([pk for pk in fs_ids if pk not in busy], now)
        run_ids = [run.pk for run in runs]
        transaction.on_commit(lambda: _enqueue_runs(run_ids))
    return run_ids, len(due)


def _enqueue_runs(run_ids: list[int]) -> None:
    # One broker hiccup must not leave the rest of the batch unqueued; a run never delivered is
    # marked ENQUEUE_FAILED (not left QUEUED under its lease), and the retry sweep queues it again.
    for pk in run_ids:
        run_enqueue(run_id=pk)


def _runs_create(fs_ids: list[int], now) -> list[Run]:
    lease_until = now + _lease()
    try:
        with transaction.atomic():  # a savepoint: a clash rolls back only the INSERT
            return Run.objects.bulk_create([
                Run(filesystem_id=pk, trigger=Run.Trigger.SCHEDULE, status=Status.QUEUED,
                    stage="Waiting for a worker", lease_until=lease_until) for pk in fs_ids])
    except IntegrityError:
        # Someone pressed "Run now" on one of them in between: start the others one by one.
        runs = []
        for pk in fs_ids:
            try:
                with transaction.atomic():
                    runs.append(Run.objects.create(filesystem_id=pk, trigger=Run.Trigger.SCHEDULE,
                                                   status=Status.QUEUED, stage="Waiting for a worker",
                                                   lease_until=lease_until))
            except IntegrityError:
                continue
        return runs
