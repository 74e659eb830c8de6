from celery import shared_task
from django.conf import settings

from . import eval_matrix

# Its own queue, "<CELERY_QUEUE>.evals": a matrix makes hundreds of model calls and must never
# delay users' tasks (the Procfile's worker consumes it).
EVAL_QUEUE = f"{settings.CELERY_TASK_DEFAULT_QUEUE}.evals"


@shared_task(name=eval_matrix.CELL_TASK, queue=EVAL_QUEUE, acks_late=True, time_limit=840, soft_time_limit=800)
def eval_cell(cell_id: int) -> str:
    """One (target, prompt variant) of a validator eval matrix; then the next queued cell."""
    return eval_matrix.cell_run(cell_id).status
