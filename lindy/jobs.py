"""The leased background job, once: every long job of every app (a hydration run, an
optimization, a learner run, a drafting step, a dispatch of inbound messages) keeps its lease in
the same fields and is claimed, kept alive and recovered by the same code.

- `LeasedJob`: the abstract model. The job's status stays its own (each kind has its own
  vocabulary); the lease is here: attempts, holder (host:pid), the Celery task id of the delivery
  holding it, its heartbeat and the recovery sweep's re-queued mark.
- `claim`: one conditional UPDATE takes a waiting job, or takes over a running one whose holder is
  dead (its heartbeat went quiet, or the asking delivery is the very task that held it: Celery
  redelivers the task of a worker that died). One statement, so it is atomic on PostgreSQL and on
  SQLite alike, with no row lock held while the job runs.
- `beating`: a heartbeat thread (lindy.heartbeat) that refreshes the job's row only while this
  delivery still holds it.
- `recover`: the sweep. A job whose holder went quiet is queued again once (`requeued_at`; a
  claim clears it), never past its attempt cap: a job at the cap is given up instead.
- `BudgetTask`: the Celery base task of jobs that call models. A `WaitForBudget` raised by the job
  queues the task again after the budget's countdown; a retry the broker refuses calls the task's
  `retry_refused`, so the job is never left under a lease nobody will renew.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from celery import Task
from celery.exceptions import Reject
from django.db import models
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from . import heartbeat

logger = logging.getLogger(__name__)

# The fields a lease consists of. No model outside this module declares them (a test holds it).
LEASE_FIELDS = ("attempts", "lease_holder", "lease_task_id", "heartbeat_at", "requeued_at")


class LeasedJob(models.Model):
    attempts = models.PositiveIntegerField(default=0, help_text="Deliveries that claimed it.")
    lease_holder = models.CharField(max_length=255, blank=True, help_text="host:pid of the worker holding it.")
    lease_task_id = models.CharField(max_length=255, blank=True, help_text="The Celery task id holding it.")
    heartbeat_at = models.DateTimeField(null=True, blank=True,
                                        help_text="Refreshed while its worker is alive, even during a model call.")
    requeued_at = models.DateTimeField(null=True, blank=True,
                                       help_text="When the recovery sweep last queued it again for a dead worker.")

    # The field holding the job's status (the learner's runs call theirs `outcome`).
    STATUS_FIELD = "status"

    class Meta:
        abstract = True

    @staticmethod
    def sweep_index(name: str, status_field: str = "status") -> models.Index:
        """The recovery sweep's index (running jobs by heartbeat). Declared by each job in its Meta:
        an abstract model's index name would need its app and class, too long for some (30 chars)."""
        return models.Index(fields=[status_field, "heartbeat_at"], name=name)


J = TypeVar("J", bound=LeasedJob)


def holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def quiet(stale_seconds: float, *, now: datetime | None = None, task_id: str = "") -> Q:
    """A holder that is gone: its heartbeat is older than the stale window (or it never beat), or
    `task_id`, the delivery asking, is the very task that held it."""
    cutoff = (now or timezone.now()) - timedelta(seconds=stale_seconds)
    dead = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True)
    if task_id:
        dead |= Q(lease_task_id=task_id[:255])
    return dead


def claim(queryset: QuerySet[J], pk: Any, *, task_id: str, waiting: Q, running: Q, stale_seconds: float,
          max_attempts: int | None = None, dead: Q | None = None, now: datetime | None = None,
          **fields: Any) -> J | None:
    """Take job `pk` for this delivery: from `waiting`, or from `running` when its holder is gone
    (see `quiet`, or the job's own `dead`) and it has attempts left. Sets `fields` (the running
    status, a stage...) in the same statement. Returns the job as taken (from `queryset`, so with
    its select_related), or None when another live delivery holds it or it is done."""
    now = now or timezone.now()
    takeover = running & (quiet(stale_seconds, now=now, task_id=task_id) | (dead or Q(pk__in=[])))
    if max_attempts is not None:
        takeover &= Q(attempts__lt=max_attempts)
    manager = queryset.model._default_manager
    taken = manager.filter(waiting | takeover, pk=pk).update(
        attempts=F("attempts") + 1, lease_holder=holder(), lease_task_id=task_id[:255], heartbeat_at=now,
        requeued_at=None, **fields)
    return queryset.get(pk=pk) if taken else None


def held(job: LeasedJob) -> Q:
    """The job's row while this delivery still holds it and it is still in the status it was
    claimed in: a takeover counts one more attempt, and a job that finished is not written again."""
    return Q(pk=job.pk, attempts=job.attempts, lease_task_id=job.lease_task_id,
             **{job.STATUS_FIELD: getattr(job, job.STATUS_FIELD)})


def beat(job: LeasedJob, *, where: Q | None = None, **fields: Any) -> int:
    """Refresh the heartbeat (and write `fields`) if this delivery still holds the job."""
    return type(job)._default_manager.filter(where or held(job)).update(heartbeat_at=timezone.now(), **fields)


def beating(job: LeasedJob, *, interval: float, fields: Callable[[], dict] | None = None) -> heartbeat.Beating:
    """A heartbeat for `job` (as claimed) while the block runs: every `interval` seconds, or at once
    on `wake()`, `beat` with what `fields()` returns (progress the job publishes). 0 turns it off."""
    where = held(job)
    return heartbeat.Beating(interval, lambda: beat(job, where=where, **(fields() if fields else {})),
                             name=f"{type(job).__name__.lower()}-heartbeat-{job.pk}")


def recover(model: type[J], *, running: Q, stale_seconds: float, max_attempts: int,
            enqueue: Callable[[J], bool | None], give_up: dict[str, Any] | Callable[[QuerySet[J]], object],
            also: Q | None = None, now: datetime | None = None, limit: int = 500,
            select_related: tuple[str, ...] = ()) -> list[Any]:
    """The recovery sweep of one kind of job. `running` jobs whose holder went quiet (or that
    match `also`, e.g. queued long ago and never picked up) are queued again with `enqueue(job)`;
    one that used up `max_attempts` gets `give_up` (fields to set, or a function of the queryset)
    instead. A job is queued once: the mark (`requeued_at`) is set before it is queued, cleared by
    the next claim, and only a mark older than the stale window (that message never reached a
    worker) lets a later sweep queue it again. `enqueue` returning False (or raising) unmarks it.
    `select_related` is what `enqueue` reads of each job. Returns the pks queued."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=stale_seconds)
    manager = model._default_manager
    stuck = manager.filter((running & quiet(stale_seconds, now=now)) | (also or Q(pk__in=[])))
    spent = stuck.filter(attempts__gte=max_attempts)
    if callable(give_up):
        give_up(spent)
    else:
        spent.update(**give_up)
    due = stuck.filter(Q(requeued_at__isnull=True) | Q(requeued_at__lt=stale), attempts__lt=max_attempts)
    queued = []
    for job in due.select_related(*select_related).order_by("pk")[:limit]:
        # Marked first, so two sweeps at once never both queue it.
        if not due.filter(pk=job.pk).update(requeued_at=now):
            continue
        try:
            sent = enqueue(job) is not False
        except Exception:
            logger.exception("%s %s: could not queue it again; the next sweep will", model.__name__, job.pk)
            sent = False
        if not sent:
            manager.filter(pk=job.pk, requeued_at=now).update(requeued_at=None)
            continue
        queued.append(job.pk)
    return queued


class WaitForBudget(Exception):  # noqa: N818 (it is an instruction to the task, not an error)
    """The job met a provider budget with no room: its task is queued again after `retry_after`
    seconds instead of holding a worker. router.budgets.BudgetExhausted is one."""

    retry_after: float


class BudgetTask(Task):
    """Base of every task that runs model calls in the background:

        @shared_task(base=jobs.BudgetTask, bind=True, budget_retries=100, ...)

    A WaitForBudget from the task's body is a retry after its countdown, `budget_retries` times at
    most. When the broker refuses that retry (Celery then rejects the message), `retry_refused`
    runs with the task's arguments: the job must not wait for a message that was never sent."""

    budget_retries = 100

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The task's body is `run` (what a worker, `apply` and a test's `task.run()` all call), so
        # the wait wraps it, as Celery's own autoretry_for does.
        body = cls.__dict__.get("run")
        if body is None:
            return
        if isinstance(body, staticmethod):
            raise TypeError(f"{cls.__name__}: a BudgetTask must be bound (bind=True) to retry itself")

        @functools.wraps(body)
        def run(self: BudgetTask, *args: Any, **kw: Any) -> Any:
            try:
                return body(self, *args, **kw)
            except WaitForBudget as exc:
                try:
                    raise self.retry(countdown=exc.retry_after, max_retries=self.budget_retries, exc=exc) from exc
                except Reject:
                    self.retry_refused(*args, **kw)
                    raise

        cls.run = run  # type: ignore[method-assign,assignment]

    def retry_refused(self, *args: Any, **kwargs: Any) -> None:
        """By default the job's recovery sweep takes it up (its heartbeat has stopped); a task
        whose job has a faster way back overrides this."""
        logger.error("%s%s: the broker refused its budget retry; its recovery sweep takes it up", self.name, args)


def leased_models(models_: Iterable[type[models.Model]]) -> list[type[LeasedJob]]:
    """The concrete job models among `models_` (the tests' registry of jobs)."""
    return [m for m in models_ if issubclass(m, LeasedJob) and not m._meta.abstract]
