"""Celery tasks: thin wrappers over hydration.services, passing ids."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from lindy import jobs

from . import services

# Below the run lease (HYDRATION_RUN_LEASE_SECONDS, 30 min by default): a run is killed before
# another trigger may consider its worker gone.
RUN_TIME_LIMIT = 1500


class HydrateTask(jobs.BudgetTask):
    def retry_refused(self, run_id: int) -> None:
        # The run was given back (QUEUED) for the budget retry: it must not sit under its lease
        # unsent; marked, the retry sweep queues it again.
        services.run_mark_enqueue_failed(run_id=run_id)


# A run waiting for provider budget is queued again up to 100 times (budget_retries) before it gives up.
@shared_task(name="hydration.tasks.hydrate", base=HydrateTask, bind=True, acks_late=True, budget_retries=100,
             autoretry_for=(OperationalError,), max_retries=3, retry_backoff=True, time_limit=RUN_TIME_LIMIT,
             soft_time_limit=RUN_TIME_LIMIT - 60)
def hydrate(self, run_id: int) -> str:
    # The task id goes into the run's lease: redelivered after its worker died, the same id takes over.
    run = services.run_execute(run_id=run_id, task_id=self.request.id or "")
    return run.status if run else "skipped"


@shared_task(name="hydration.tasks.recover", acks_late=True, time_limit=120, soft_time_limit=100)
def recover() -> int:
    return len(services.runs_recover())


@shared_task(name="hydration.tasks.dispatch_due", acks_late=True, time_limit=300, soft_time_limit=240)
def dispatch_due() -> int:
    services.runs_enqueue_retry()
    return len(services.schedule_dispatch())


@shared_task(name="hydration.tasks.schedules_backfill", acks_late=True, time_limit=600, soft_time_limit=540)
def schedules_backfill() -> int:
    return services.schedules_backfill()
