from celery import shared_task

from . import eval_matrix


@shared_task(name=eval_matrix.CELL_TASK, acks_late=True, time_limit=840, soft_time_limit=800)
def eval_cell(cell_id: int) -> str:
    """One (target, prompt variant) of a validator eval matrix; then the next queued cell."""
    return eval_matrix.cell_run(cell_id).status
