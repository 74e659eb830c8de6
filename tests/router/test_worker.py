"""An eval started from the UI runs on a real Celery worker against an OpenAI-compatible server."""

import json

import pytest

from router.models import EvalRun, Route
from tests.conftest import client_for
from tests.fakes.http import Reply
from tests.fakes.openai_chat import PATH, FakeChatCompletions, completion
from tests.waiting import wait_until

from .helpers import cheap_target


def _always_blocks(recorded):
    call = {"id": "call_1", "type": "function", "function": {
        "name": "record_verdict", "arguments": json.dumps(
            {"approved": False, "reasoning": "r", "confidence": "high", "suggestedNextStep": "ask the user"})}}
    return Reply(200, completion({"content": None, "tool_calls": [call]}))


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_eval_runs_on_a_worker(celery_worker_process, cast, monkeypatch):
    with FakeChatCompletions() as fake:
        fake.default("POST", PATH, _always_blocks)
        monkeypatch.setenv("LINDY_MODEL_OFFLINE", "0")
        monkeypatch.setenv("LINDY_PROVIDER_KEY_ATLAS", fake.API_KEY)
        monkeypatch.setenv("LINDY_PROVIDER_URL_ATLAS", fake.base_url)  # the host the key is bound to
        target = cheap_target(base_url=fake.base_url)
        Route.objects.get(name="validator")
        celery_worker_process.start()
        response = client_for(cast.superuser).post("/router/routes/validator/evals/", {"target": target.pk, "variant": "default"})
        run = EvalRun.objects.get()
        assert response["Location"] == f"/router/evals/{run.pk}/"
        wait_until(lambda: EvalRun.objects.get(pk=run.pk).status == "done", what=celery_worker_process.log)
        run.refresh_from_db()
    # The 33 block cases pass, and the 2 exempt ones; only the cases the product does not answer
    # by itself (exempt, no justification, arguments the user never wrote) reach the model.
    assert (run.completed, run.passed, run.provider_used) == (60, 35, "openai")
    assert len(fake.chat_requests) == run.results.filter(call__isnull=False).count() > 0
