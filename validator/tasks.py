from celery import shared_task

from . import anomalies, daily_stats, eval_matrix

# Routed to "<CELERY_QUEUE>.evals" by settings.LINDY_QUEUE_CLASSES: a matrix makes hundreds of
# model calls and must never delay users' tasks.


@shared_task(name=eval_matrix.CELL_TASK, acks_late=True, time_limit=840, soft_time_limit=800)
def eval_cell(cell_id: int) -> str:
    """One (target, prompt variant) of a validator eval matrix; then the next queued cell."""
    return eval_matrix.cell_run(cell_id).status


@shared_task(name="validator.tasks.stats_rollup", acks_late=True, time_limit=600, soft_time_limit=540)
def stats_rollup() -> int:
    """The admins' statistics: roll up the decisions of the days that have ended (validator.daily_stats)."""
    return daily_stats.rollup()


@shared_task(name="validator.tasks.block_rate_anomalies", acks_late=True, time_limit=600, soft_time_limit=540,
             autoretry_for=(ConnectionError,), max_retries=3, retry_backoff=True)
def block_rate_anomalies() -> int:
    """Hourly: block rates per tool and prompt variant against their trailing baseline (validator.anomalies)."""
    return len(anomalies.block_rate_alerts_check())


@shared_task(name=anomalies.PUSH_TASK, acks_late=True, time_limit=120, soft_time_limit=100,
             autoretry_for=(Exception,), max_retries=5, retry_backoff=True)
def block_rate_alert_push(alert_id: int) -> dict:
    """Tell support about a new block-rate alert, by email and on Slack, each once (validator.anomalies)."""
    return anomalies.alert_push(alert_id=alert_id)
