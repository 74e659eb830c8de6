from celery import shared_task

from . import budgets, services

# An eval run waiting for provider budget is queued again this many times before it gives up.
BUDGET_RETRIES = 100


@shared_task(name="router.tasks.guardrails_check", acks_late=True, time_limit=600, soft_time_limit=540)
def guardrails_check() -> dict:
    """Beat: judge sampled calls, then ramp or roll back every running rollout. The judge's calls
    do not wait for budget: samples it cannot judge now are left for the next check."""
    with budgets.background():
        return {str(k): v for k, v in services.guardrails_check_all().items()}


@shared_task(
    name="router.tasks.eval_run", bind=True, acks_late=True, time_limit=3600, soft_time_limit=3500,
    autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=3,
)
def eval_run(self, run_id: int) -> str:
    """Runs the cases still without a result, so a retry resumes rather than repeats."""
    try:
        return services.eval_run_execute(run_id=run_id).status
    except budgets.BudgetExhausted as exc:
        raise self.retry(countdown=exc.retry_after, max_retries=BUDGET_RETRIES, exc=exc) from exc


@shared_task(
    name="router.tasks.optimization_run", bind=True, acks_late=True, time_limit=3500, soft_time_limit=3400,
    autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=3,
)
def optimization_run(self, run_id: int) -> str:
    """Runs or resumes a prompt optimization (from its last stored generation)."""
    try:
        run = services.optimization_run_execute(run_id=run_id, task_id=self.request.id or "")
    except budgets.BudgetExhausted as exc:
        raise self.retry(countdown=exc.retry_after, max_retries=BUDGET_RETRIES, exc=exc) from exc
    return run.status if run else "gone"


@shared_task(name="router.tasks.optimization_recover", acks_late=True, time_limit=120)
def optimization_recover() -> list[int]:
    """Beat: queue again the optimizations whose worker went quiet."""
    return services.optimization_recover()
