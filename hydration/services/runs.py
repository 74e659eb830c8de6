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
from datetime import timedelta
from decimal import Decimal
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from lindy import failures, jobs, queue
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


def _dead_holder() -> Q:
    """Hydration's own sign of a dead holder, beside lindy.jobs.quiet: a lease that passed (the
    backstop of a run whose heartbeat is off)."""
    return Q(lease_until__lt=timezone.now())


def _claim(run_id: int, task_id: str = "") -> Run | None:
    now = timezone.now()
    return jobs.claim(
        Run.objects.select_related("filesystem", "filesystem__team", "filesystem__owner"), run_id,
        task_id=task_id, waiting=Q(status=Status.QUEUED), running=Q(status=Status.RUNNING),
        stale_seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS, max_attempts=settings.HYDRATION_RUN_MAX_ATTEMPTS,
        dead=_dead_holder(), now=now,
        status=Status.RUNNING, lease_until=now + _lease(), started_at=now, stage="Starting")


class _Progress:
    """Keeps the run's stage and usage up to date as it goes. The heartbeat thread writes them
    (with a fresh heartbeat and lease) as soon as they change: the run's own path spends no round
    trip on progress, and a burst of stage changes while the thread writes is one write. With the
    heartbeat off (HYDRATION_HEARTBEAT_SECONDS = 0, or inside the caller's transaction) progress is
    written in place."""

    def __init__(self, run: Run):
        self.run = run
        self._pending: dict | None = None
        self.where = jobs.held(run)
        self.beating = jobs.beating(run, interval=settings.HYDRATION_HEARTBEAT_SECONDS, fields=self._take)

    def _take(self) -> dict:
        # One reference swap: the thread writes the latest snapshot. What is still pending at the
        # end is not written: the run's end (_finish) writes every field.
        fields, self._pending = self._pending, None
        return {**(fields or {}), "lease_until": timezone.now() + _lease()}

    def stage(self, text: str) -> None:
        run = self.run
        run.stage = text[:200]
        run.lease_until = timezone.now() + _lease()
        # A snapshot: the thread writes these values, whatever the run does meanwhile.
        self._pending = {
            "stage": run.stage, "sources": dict(run.sources), "model_calls": run.model_calls,
            "input_tokens": run.input_tokens, "output_tokens": run.output_tokens, "cost": run.cost,
        }
        if self.beating.running:
            self.beating.wake()
        else:
            jobs.beat(run, where=self.where, **self._take())

    def call(self, completion) -> None:
        run = self.run
        run.model_calls += 1
        run.input_tokens += completion.usage.input_tokens + completion.usage.cache_read_tokens
        run.output_tokens += completion.usage.output_tokens
        run.cost = Decimal(run.cost) + Decimal(completion.cost or 0)


def run_execute(*, run_id: int, task_id: str = "") -> Run | None:
    """Do the run if it is still to be done: queued, or running for a holder that is dead (see
    lindy.jobs.claim). A duplicate delivery while the holder lives does nothing. `task_id` is the
    Celery task id of this delivery, recorded in the lease."""
    run = _claim(run_id, task_id)
    if run is None:
        return None
    progress = _Progress(run)
    with progress.beating:
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
    until the broker's visibility timeout (1 h). Idempotent (lindy.jobs.recover): a run is queued
    once per stale window, and a delivery that finds the run taken over does nothing (the lease
    decides). A run whose workers died HYDRATION_RUN_MAX_ATTEMPTS times is given up, its items
    kept. Returns the runs queued."""
    now = now or timezone.now()
    cap = settings.HYDRATION_RUN_MAX_ATTEMPTS
    return jobs.recover(
        Run, running=Q(status=Status.RUNNING), also=Q(status=Status.RUNNING) & _dead_holder(),
        stale_seconds=settings.HYDRATION_HEARTBEAT_STALE_SECONDS, max_attempts=cap, now=now, limit=limit,
        enqueue=lambda run: queue.enqueue(HYDRATE_TASK, run.pk),
        give_up={"status": Status.INTERRUPTED, "finished_at": now, "stage": "Interrupted",
                 "error": f"Its worker died in each of {cap} attempts; the next run picks up its stored items."})


def run_now_sync(*, filesystem: FileSystem, trigger: str = Run.Trigger.COMMAND, user=None) -> Run:
    """Trigger and execute in this process (manage.py hydrate, the demo)."""
    run, created = run_trigger(filesystem=filesystem, trigger=trigger, user=user, enqueue=False)
    if not created and run.status == Status.RUNNING:
        return run
    done = run_execute(run_id=run.pk)
    return done or Run.objects.get(pk=run.pk)

