from celery import shared_task

from lindy.models import AgentTask, TaskEvent


@shared_task(name="validator.tasks.agent_run", acks_late=True, time_limit=600, soft_time_limit=540,
             autoretry_for=(ConnectionError,), max_retries=3, retry_backoff=True)
def agent_run(task_id: int) -> str:
    """Run the agent loop on a task that has a new instruction from the user. Idempotent: a
    task whose last event is not the user's has been answered already."""
    from lindy import agent

    task = AgentTask.objects.filter(pk=task_id).first()
    if task is None:
        return "gone"
    last = task.events.order_by("-seq").values_list("actor", flat=True).first()
    if last != TaskEvent.Actor.USER:
        return "answered"
    return agent.run(task).stopped
