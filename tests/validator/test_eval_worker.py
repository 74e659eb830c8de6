"""The eval matrix started from the page runs on a real Celery worker, on its own queue."""


import pytest
from django.conf import settings

from tests.conftest import client_for
from tests.waiting import wait_until
from validator.models import EvalMatrix


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_the_matrix_fans_out_to_a_worker_on_the_evals_queue(celery_worker_process, cast):
    from lindy.celery import app

    evals = f"{settings.CELERY_TASK_DEFAULT_QUEUE}.evals"
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(evals)
    # The worker consumes the eval queue (as the Procfile's worker does), not only the default one.
    celery_worker_process.start("-Q", f"{settings.CELERY_TASK_DEFAULT_QUEUE},{evals}")
    response = client_for(cast.superuser).post("/validator/evals/run/", {"offline_only": "1"})
    matrix = EvalMatrix.objects.get()
    assert response["Location"] == f"/validator/evals/?matrix={matrix.pk}"
    wait_until(lambda: EvalMatrix.objects.get(pk=matrix.pk).status == "done", what=celery_worker_process.log)
    matrix.refresh_from_db()
    cells = list(matrix.cells.all())
    assert [c.status for c in cells] == ["done"]  # the offline rules: one cell for every prompt variant
    assert all(c.completed == matrix.case_count == 60 for c in cells)
    assert matrix.gate_passed is not None
