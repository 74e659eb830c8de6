from celery import shared_task

from . import services


@shared_task(name="analyst.tasks.task_score", acks_late=True, time_limit=300, soft_time_limit=270,
             autoretry_for=(ConnectionError,), max_retries=3, retry_backoff=True)
def task_score(task_id: int, through_seq: int, call_ids: list[int] | None = None, stopped: str = "") -> str:
    """Score one finished run of the agent (idempotent: a scored run is left as it is)."""
    score = services.task_score(task_id=task_id, through_seq=through_seq, call_ids=call_ids or [], stopped=stopped)
    return "gone" if score is None else f"{score.score:.3f}"


@shared_task(name="analyst.tasks.failure_triage", acks_late=True, time_limit=300, soft_time_limit=270,
             autoretry_for=(ConnectionError,), max_retries=3, retry_backoff=True)
def failure_triage(group_id: int) -> str:
    """The analyst's triage of a new or regressed failure group (its latest example)."""
    from .failures import triage
    from .models import FailureGroup

    group = FailureGroup.objects.filter(pk=group_id).first()
    if group is None:
        return "gone"
    return "error" if triage.group_triage(group=group).get("error") else "triaged"
