"""The learner's Celery tasks: thin wrappers over drafting.learner.services and .initialization,
passing ids.
Registered from drafting's AppConfig.ready (drafting.learner.setup)."""

from __future__ import annotations

from celery import shared_task
from django.contrib.auth import get_user_model
from django.db import OperationalError

from lindy import jobs
from router.types import ModelError

from . import initialization, services

TIME_LIMIT = 1200


@shared_task(name="drafting.tasks.learner_cadence", acks_late=True, time_limit=300, soft_time_limit=240)
def learner_cadence() -> int:
    services.learner_runs_recover()
    initialization.context_inits_recover()
    return len(services.learner_cadence_dispatch())


# The model-calling tasks wait for provider budget (jobs.BudgetTask) up to 50 times.
@shared_task(name="drafting.tasks.learner_run", base=jobs.BudgetTask, bind=True, acks_late=True, budget_retries=50,
             autoretry_for=(OperationalError,), max_retries=3, retry_backoff=True, time_limit=TIME_LIMIT,
             soft_time_limit=TIME_LIMIT - 60)
def learner_run(self, user_id: int, trigger: str = "cadence") -> str:
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return "no such user"
    try:
        run = services.learner_run(user=user, trigger=trigger, task_id=self.request.id or "")
    except jobs.WaitForBudget:
        raise  # the base task waits for the budget
    except ModelError as exc:
        raise self.retry(countdown=60, exc=exc) from exc
    return run.outcome


@shared_task(name="drafting.tasks.learner_init_fetch", bind=True, acks_late=True, max_retries=5, retry_backoff=True,
             time_limit=TIME_LIMIT, soft_time_limit=TIME_LIMIT - 60)
def learner_init_fetch(self, init_id: int) -> int | None:
    try:
        return initialization.context_init_fetch(init_id=init_id, task_id=self.request.id or "")
    except Exception as exc:  # Gmail rate limits and outages: retried with backoff
        raise self.retry(exc=exc) from exc


@shared_task(name="drafting.tasks.learner_init_compose", base=jobs.BudgetTask, bind=True, acks_late=True,
             budget_retries=50, max_retries=5, retry_backoff=True, time_limit=TIME_LIMIT,
             soft_time_limit=TIME_LIMIT - 60)
def learner_init_compose(self, init_id: int) -> str:
    try:
        init = initialization.context_init_compose(init_id=init_id, task_id=self.request.id or "")
    except jobs.WaitForBudget:
        raise  # the base task waits for the budget
    except (ModelError, OperationalError) as exc:
        raise self.retry(exc=exc) from exc
    return init.status if init else "skipped"
