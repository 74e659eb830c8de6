from celery import shared_task

from lindy import jobs

from . import budgets, services


@shared_task(name="router.tasks.guardrails_check", acks_late=True, time_limit=600, soft_time_limit=540)
def guardrails_check() -> dict:
    """Beat: judge sampled calls, then ramp or roll back every running rollout. The judge's calls
    do not wait for budget: samples it cannot judge now are left for the next check."""
    with budgets.background():
        return {str(k): v for k, v in services.guardrails_check_all().items()}


# Both wait for provider budget (jobs.BudgetTask) up to 100 times before they give up. Their hard
# limit stays below the broker's visibility timeout (1 h), or a live run would be delivered twice.
@shared_task(
    name="router.tasks.eval_run", base=jobs.BudgetTask, bind=True, acks_late=True, budget_retries=100,
    time_limit=3500, soft_time_limit=3400, autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=3,
)
def eval_run(self, run_id: int) -> str:
    """Runs the cases still without a result, so a retry resumes rather than repeats."""
    return services.eval_run_execute(run_id=run_id).status


@shared_task(
    name="router.tasks.optimization_run", base=jobs.BudgetTask, bind=True, acks_late=True, budget_retries=100,
    time_limit=3500, soft_time_limit=3400, autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=3,
)
def optimization_run(self, run_id: int) -> str:
    """Runs or resumes a prompt optimization (from its last stored generation)."""
    run = services.optimization_run_execute(run_id=run_id, task_id=self.request.id or "")
    return run.status if run else "gone"


@shared_task(name="router.tasks.optimization_recover", acks_late=True, time_limit=120)
def optimization_recover() -> list[int]:
    """Beat: queue again the optimizations whose worker went quiet."""
    return services.optimization_recover()
