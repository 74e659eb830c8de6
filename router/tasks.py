from celery import shared_task

from . import services


@shared_task(name="router.tasks.guardrails_check", acks_late=True, time_limit=600, soft_time_limit=540)
def guardrails_check() -> dict:
    """Beat: judge sampled calls, then ramp or roll back every running rollout."""
    return {str(k): v for k, v in services.guardrails_check_all().items()}


@shared_task(
    name="router.tasks.eval_run", acks_late=True, time_limit=3600, soft_time_limit=3500,
    autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=3,
)
def eval_run(run_id: int) -> str:
    """Runs the cases still without a result, so a retry resumes rather than repeats."""
    return services.eval_run_execute(run_id=run_id).status
