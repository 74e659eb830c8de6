from celery import shared_task

from . import eval_matrix

# Routed to "<CELERY_QUEUE>.evals" by settings.LINDY_QUEUE_CLASSES: a matrix makes hundreds of
# model calls and must never delay users' tasks.


@shared_task(name=eval_matrix.CELL_TASK, acks_late=True, time_limit=840, soft_time_limit=800)
def eval_cell(cell_id: int) -> str:
    """One (target, prompt variant) of a validator eval matrix; then the next queued cell."""
    return eval_matrix.cell_run(cell_id).status
