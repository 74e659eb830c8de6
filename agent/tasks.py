from celery import shared_task

from . import services


@shared_task(name="agent.tasks.agent_run", acks_late=True, time_limit=600, soft_time_limit=540,
             autoretry_for=(ConnectionError,), max_retries=3, retry_backoff=True)
def agent_run(task_id: int) -> str:
    """Run the agent loop on a task that has a new instruction from the user (idempotent)."""
    return services.agent_run(task_id=task_id)


@shared_task(name="validator.tasks.agent_run", acks_late=True, time_limit=600, soft_time_limit=540,
             autoretry_for=(ConnectionError,), max_retries=3, retry_backoff=True)
def agent_run_legacy_name(task_id: int) -> str:
    """Messages queued before the agent got its own app carry the validator's task name."""
    return services.agent_run(task_id=task_id)


@shared_task(name="agent.tasks.outbox_resume", acks_late=True, time_limit=900, soft_time_limit=840)
def outbox_resume() -> int:
    """Periodic: drive live actions left not confirmed (each checks the provider first)."""
    return services.outbox_resume()
