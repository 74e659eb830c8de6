"""The hook: when the agent finishes a run, a real Celery worker scores it (analyst.tasks.task_score)."""


import pytest

from agent import services as agent_services
from analyst.models import ScoredCall, TaskScore
from router.models import CallScore
from tests.waiting import wait_until


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_finished_run_is_scored_by_the_worker_with_every_call_of_the_run(cast, celery_worker_process):
    celery_worker_process.start()
    task = agent_services.handle_inbound(user=cast.member, channel="imessage", conversation_ref="c1", messages=[
        {"text": "Send an email to jane@initech.test saying the contract is signed."}])
    wait_until(lambda: TaskScore.objects.filter(task=task).exists(), what=celery_worker_process.log)
    score = TaskScore.objects.get(task=task)
    assert score.score == 1.0 and score.stopped == "done" and score.provider == "offline"
    routes = sorted(ScoredCall.objects.filter(task_score=score).values_list("route", flat=True))
    assert routes.count("agent") == 3 and routes.count("validator") == 1
    assert CallScore.objects.filter(metric="analyst.task_score", source="analyst").count() == 4
    celery_worker_process.stop()
