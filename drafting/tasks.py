"""Celery tasks: thin wrappers over drafting.services, passing ids."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from lindy import jobs

from . import services

RETRIES = 5


@shared_task(name="drafting.tasks.items_process", acks_late=True, autoretry_for=(OperationalError,), max_retries=3,
             retry_backoff=True, time_limit=120, soft_time_limit=100)
def items_process(filesystem_id: int, run_id: int | None = None) -> int:
    """Queue the new Gmail items of a hydration run (or of a memory) for drafting and pairing."""
    return services.items_enqueue(filesystem_id=filesystem_id, run_id=run_id)


@shared_task(name="drafting.tasks.item_process", base=jobs.BudgetTask, bind=True, acks_late=True, budget_retries=100,
             autoretry_for=(OperationalError,), max_retries=RETRIES, retry_backoff=True, time_limit=300,
             soft_time_limit=270)
def item_process(self, item_id: int) -> str:
    # The task id goes into the draft's lease: redelivered after its worker died, the same id takes over.
    try:
        return services.item_process(item_id=item_id, task_id=self.request.id or "")
    except services.Retry as exc:
        raise self.retry(countdown=min(30 * 2 ** self.request.retries, 1800), exc=exc) from exc


@shared_task(name="drafting.tasks.sweep", acks_late=True, time_limit=300, soft_time_limit=240)
def sweep() -> int:
    return services.sweep()
