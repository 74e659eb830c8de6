"""Hydration runs: their lifecycle, from the trigger to the end.

    run, created = run_trigger(filesystem=fs, trigger="manual", user=request.user)
    run_execute(run_id=run.pk)         # in a Celery worker, or synchronously

A run is queued once per file system (the database refuses a second live run), claimed by one
worker under a lease its heartbeat keeps fresh, and recovered when its worker dies; a run whose
worker died loses its lease and the next trigger takes over from the stored items. What a run
does once claimed is hydration.services.pipeline.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta
from decimal import Decimal
from functools import partial

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from lindy import bulk, failures, queue
from memory.models import FileSystem
from router import budgets

from ..models import Run
from .pipeline import _failure_context, _failure_log, _finish, _pipeline

logger = logging.getLogger(__name__)
Status = Run.Status

def _lease() -> timedelta:
    return timedelta(seconds=settings.HYDRATION_RUN_LEASE_SECONDS)


def runs_expire(*, filesystem: FileSystem | None = None) -> int:
    """Mark live runs whose worker stopped renewing their lease as interrupted."""
    now = timezone.now()
    stale = Run.objects.filter(status__in=Run.ACTIVE, lease_until__lt=now)
    if filesystem is not None:
        stale = stale.filter(filesystem=filesystem)
    return stale.update(status=Status.INTERRUPTED, finished_at=now,
                        error="The worker stopped before finishing; the next run picks up its stored items.")


def run_trigger(*, filesystem: FileSystem, trigger: str, user=None, enqueue: bool = True) -> tuple[Run, bool]:
    """A new queued run, or the live one when there is one already (created=False)."""
    runs_expire(filesystem=filesystem)
    for attempt in range(3):
        try:
            with transaction.atomic():
                run = Run.objects.create(filesystem=filesystem, trigger=trigger, triggered_by=user,
                                         status=Status.QUEUED, stage="Waiting for a worker",
                                         lease_until=timezone.now() + _lease())
            break
        except IntegrityError:
            active = Run.objects.filter(filesystem=filesystem, status__in=Run.ACTIVE).first()
            if active is not None:
                return active, False
            if attempt == 2:  # the live run kept finishing in between: give up loudly
                raise
    if enqueue:
        transaction.on_commit(lambda: _enqueue(run))
    return run, True


HYDRATE_TASK = "hydration.tasks.hydrate"
# Also said of a run given back to wait for budget, which had started: its stored items are kept.
ENQUEUE_FAILED_MESSAGE = ("The task queue could not be reached, so this run is not running. Press Run now to try "
                          "again; the scheduler also re-queues it within minutes once the queue is back.")


def _enqueue(run: Run) -> None:
    """Queue the run, or mark it "could not be queued" (not live): a run the broker never got must
    not hold the file system's one live slot, or every later click says "already in progress"."""
    if not run_enqueue(run_id=run.pk):
        run.refresh_from_db(fields=["status", "stage", "finished_at", "error"])


def run_enqueue(*, run_id: int, countdown: float | None = None) -> bool:
    """Every path that hands a queued run to the broker (Run now, the dispatch tick, the retry sweep,
    a run given back to wait for budget) goes through here, so a refusal is never only logged: the
    run is marked ENQUEUE_FAILED at once and runs_enqueue_retry queues it again. Returns whether
    the broker took it."""
    if queue.enqueue_or_log(HYDRATE_TASK, run_id, countdown=countdown):
        return True
    run_mark_enqueue_failed(run_id=run_id)
    return False


def run_mark_enqueue_failed(*, run_id: int) -> int:
    """A queued run the broker never got. Only a QUEUED row: one a worker claimed meanwhile (an
    eager task, a delivery that did arrive) is left as it is."""
    return Run.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.ENQUEUE_FAILED, stage="", finished_at=timezone.now(), error=ENQUEUE_FAILED_MESSAGE,
        lease_holder="", lease_task_id="")


def runs_enqueue_retry(*, limit: int = 500) -> list[int]:
    """Re-queue runs that could not be queued (the dispatch task calls this every few minutes): the
    latest run of a file system, triggered within one interval. Returns the runs queued again."""
    now = timezone.now()
    newer = Run.objects.filter(filesystem_id=OuterRef("filesystem_id"), pk__gt=OuterRef("pk"))
    failed = (Run.objects.filter(status=Status.ENQUEUE_FAILED,
                                 created_at__gte=now - timedelta(seconds=settings.HYDRATION_INTERVAL_SECONDS))
              .exclude(Exists(newer)).order_by("created_at")[:limit])
    requeued = []
    for run in failed:
        try:
            with transaction.atomic():
                revived = Run.objects.filter(pk=run.pk, status=Status.ENQUEUE_FAILED).update(
                    status=Status.QUEUED, stage="Waiting for a worker", finished_at=None, error="",
                    lease_until=now + _lease())
        except IntegrityError:  # a live run exists for the file system: it will take the items
            continue
        if revived:
            requeued.append(run.pk)
            transaction.on_commit(partial(_enqueue, run))
    return requeued


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def _dead_holder(now, task_id: str = "") -> Q:
    """A running run whose holder is gone: its lease passed, its heartbeat went quiet, or the
    delivery asking is the very task that held it (Celery redelivers a task whose worker died)."""
    stale = now - timedelta(seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS)
    dead = Q(lease_until__lt=now) | Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, started_at__lt=stale)
    if task_id:
        dead |= Q(lease_task_id=task_id)
    return Q(status=Status.RUNNING) & dead


def _claim(run_id: int, task_id: str = "") -> Run | None:
    now = timezone.now()
    claimed = Run.objects.filter(
        Q(status=Status.QUEUED) | (_dead_holder(now, task_id) & Q(attempts__lt=settings.HYDRATION_RUN_MAX_ATTEMPTS)),
        pk=run_id,
    ).update(status=Status.RUNNING, attempts=F("attempts") + 1, lease_until=now + _lease(),
             started_at=now, stage="Starting", lease_holder=_holder(), lease_task_id=task_id[:255],
             heartbeat_at=now, requeued_at=None)
    if not claimed:
        return None
    return Run.objects.select_related("filesystem", "filesystem__team", "filesystem__owner").get(pk=run_id)


class _Heartbeat:
    """While the run executes, a thread keeps its row current: the heartbeat (and lease) every
    few seconds, even while the run waits minutes on one model call (a heartbeat that stops means
    the worker died, and the run may be taken over without waiting for the lease to pass), and the
    progress the run publishes (stage, usage) as soon as it changes. The run's own path spends no
    round trip on progress, and a burst of stage changes while the thread writes is one write.
    With the heartbeat off (HYDRATION_HEARTBEAT_SECONDS = 0) progress is written in place."""

    def __init__(self, run: Run):
        self.run = run
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._pending: dict | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Heartbeat:
        interval = settings.HYDRATION_HEARTBEAT_SECONDS
        # Inside the caller's transaction (the demo's seed) the run's row is uncommitted: a thread
        # on its own connection can't see it (PostgreSQL) or waits on the caller's write lock
        # (SQLite). Progress is then written in place, on the caller's connection.
        if interval > 0 and not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._beat, args=(interval,), daemon=True,
                                            name=f"hydration-heartbeat-{self.run.pk}")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        # What is still pending is not written: the run's end (_finish) writes every field.
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)

    def publish(self, fields: dict) -> None:
        """Write these progress fields (with a fresh heartbeat and lease) soon: on the thread, or
        here when there is none."""
        if self._thread is None:
            self._write(fields)
            return
        self._pending = fields  # one reference swap: the thread takes the latest
        self._wake.set()

    def _write(self, fields: dict) -> None:
        run = self.run
        now = timezone.now()
        # A dozen times a run: the statement written directly, not built as a query each time.
        bulk.row_update(Run, {"pk": run.pk, "attempts": run.attempts, "status": Status.RUNNING},
                        {**fields, "heartbeat_at": now, "lease_until": now + _lease()})

    def _beat(self, interval: float) -> None:
        try:
            while True:
                self._wake.wait(interval)
                if self._stop.is_set():
                    return
                self._wake.clear()
                fields, self._pending = self._pending, None
                try:
                    self._write(fields or {})
                except DatabaseError:  # a missed beat is no failure; the next one may get through
                    logger.warning("hydration run %s: heartbeat failed", self.run.pk, exc_info=True)
        finally:
            connection.close()  # the thread's own connection


class _Progress:
    """Keeps the run's stage and usage up to date as it goes (written by the heartbeat)."""

    def __init__(self, run: Run, heartbeat: _Heartbeat):
        self.run = run
        self.heartbeat = heartbeat

    def stage(self, text: str) -> None:
        run = self.run
        run.stage = text[:200]
        run.lease_until = timezone.now() + _lease()
        # A snapshot: the thread writes these values, whatever the run does meanwhile.
        self.heartbeat.publish({
            "stage": run.stage, "sources": dict(run.sources), "model_calls": run.model_calls,
            "input_tokens": run.input_tokens, "output_tokens": run.output_tokens, "cost": run.cost,
        })

    def call(self, completion) -> None:
        run = self.run
        run.model_calls += 1
        run.input_tokens += completion.usage.input_tokens + completion.usage.cache_read_tokens
        run.output_tokens += completion.usage.output_tokens
        run.cost = Decimal(run.cost) + Decimal(completion.cost or 0)


def run_execute(*, run_id: int, task_id: str = "") -> Run | None:
    """Do the run if it is still to be done: queued, or running for a holder that is dead (see
    _dead_holder). A duplicate delivery while the holder lives does nothing. `task_id` is the
    Celery task id of this delivery, recorded in the lease."""
    run = _claim(run_id, task_id)
    if run is None:
        return None
    with _Heartbeat(run) as heartbeat:
        progress = _Progress(run, heartbeat)
        try:
            with budgets.background():
                return _pipeline(run, progress)
        except budgets.BudgetExhausted:
            _wait_for_budget(run)
            raise  # the task queues the run again after the budget's countdown
        except Exception as exc:
            logger.exception("hydration run %s failed", run.pk)
            failures.capture(exc, kind="hydration_run", route="hydration", **_failure_context(run),
                             log=_failure_log(run))
            return _finish(run, Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000])


def _wait_for_budget(run: Run) -> None:
    """The provider's budget is used up: give the run back to the queue (its items are stored;
    the next attempt starts from them) rather than failing it."""
    Run.objects.filter(pk=run.pk, status=Status.RUNNING).update(
        status=Status.QUEUED, stage="Waiting for the model provider's budget", lease_until=timezone.now() + _lease(),
        lease_holder="", lease_task_id="")


def runs_recover(*, now=None, limit: int = 500) -> list[int]:
    """The recovery sweep (beat, every HYDRATION_RECOVER_EVERY_SECONDS): queue again each running
    run whose heartbeat went quiet, since a worker killed whole leaves its message unacknowledged
    until the broker's visibility timeout (1 h). Idempotent: a run is queued once per stale window
    (`requeued_at`), and a delivery that finds the run taken over does nothing (the lease decides).
    A run whose workers died HYDRATION_RUN_MAX_ATTEMPTS times is given up, its items kept.
    Returns the runs queued."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS)
    dead = Run.objects.filter(_dead_holder(now))
    dead.filter(attempts__gte=settings.HYDRATION_RUN_MAX_ATTEMPTS).update(
        status=Status.INTERRUPTED, finished_at=now, stage="Interrupted",
        error=f"Its worker died in each of {settings.HYDRATION_RUN_MAX_ATTEMPTS} attempts; the next run picks up "
              "its stored items.")
    due = dead.filter(Q(requeued_at__isnull=True) | Q(requeued_at__lt=stale),
                      attempts__lt=settings.HYDRATION_RUN_MAX_ATTEMPTS)
    queued = []
    for run_id in due.order_by("pk").values_list("pk", flat=True)[:limit]:
        # Mark first, so two sweeps never both queue it; unmark when the broker refuses.
        if not due.filter(pk=run_id).update(requeued_at=now):
            continue
        try:
            queue.enqueue(HYDRATE_TASK, run_id)
        except Exception:
            logger.exception("hydration run %s: could not queue it again; the next sweep will", run_id)
            Run.objects.filter(pk=run_id, requeued_at=now).update(requeued_at=None)
            continue
        queued.append(run_id)
    return queued


def run_now_sync(*, filesystem: FileSystem, trigger: str = Run.Trigger.COMMAND, user=None) -> Run:
    """Trigger and execute in this process (manage.py hydrate, the demo)."""
    run, created = run_trigger(filesystem=filesystem, trigger=trigger, user=user, enqueue=False)
    if not created and run.status == Status.RUNNING:
        return run
    done = run_execute(run_id=run.pk)
    return done or Run.objects.get(pk=run.pk)

