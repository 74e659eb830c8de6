"""A prompt optimization is a Celery job that survives its worker being killed: the redelivered
task resumes from the last generation stored in the run's row (gepa's state), not from scratch."""

import os
import signal

import pytest

from router import services
from router.models import OptimizationRun, PromptVariant, Target
from tests.waiting import wait_until

from .helpers import route


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_is_killed_resumes_from_its_last_generation(celery_worker_process):
    validator = route("validator")
    target = Target.objects.get(name="offline-rules")
    celery_worker_process.start("--pool=prefork", "--concurrency=1")
    run = services.optimization_run_start(route=validator, target=target, budget_usd="1", budget_calls=700)
    wait_until(lambda: (lambda r: r.generation >= 2 or not r.is_active)(OptimizationRun.objects.get(pk=run.pk)),
               what=celery_worker_process.log)
    run.refresh_from_db()
    assert run.status == "running" and run.generation >= 2, (run.status, run.log, celery_worker_process.log())
    assert run.state  # gepa's state of the last finished generation, in the database
    killed_at_generation = run.generation
    child = int(run.lease_holder.rsplit(":", 1)[1])
    assert child != celery_worker_process.proc.pid  # the pool's child, not the worker
    first_task = run.lease_task_id
    os.kill(child, signal.SIGKILL)
    wait_until(lambda: not OptimizationRun.objects.get(pk=run.pk).is_active, timeout=600, what=celery_worker_process.log)
    run.refresh_from_db()
    assert run.status == "done", (run.status, run.error, run.log, celery_worker_process.log())
    assert run.attempts == 2 and run.lease_task_id == first_task  # the same message, redelivered at once
    lines = [line["text"] for line in run.log]
    assert sum(text.startswith("Started:") for text in lines) == 1
    resumed = [text for text in lines if text.startswith("Resumed at generation")]
    assert len(resumed) == 1 and int(resumed[0].split()[3]) >= killed_at_generation
    assert run.generation > killed_at_generation and run.spent_calls <= 700
    assert PromptVariant.objects.filter(optimization=run).exists()
    celery_worker_process.stop()
