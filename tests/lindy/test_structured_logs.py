"""Structured logs: a request's lines carry its request id, the user's id (never an email) and its route;
the request id follows the work into the Celery tasks it queued (task headers), next to the task id."""

import json
import time
import uuid

import pytest
import structlog
from django.core.cache import cache
from django.test import Client

from lindy.tasks import ping


def _finished(caplog) -> dict:
    events = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == "request_finished"]
    assert events, [r.getMessage() for r in caplog.records]
    return events[-1]


@pytest.mark.django_db
def test_a_request_logs_its_id_the_user_id_and_the_route_never_the_email(cast, caplog):
    client = Client()
    client.force_login(cast.member)
    with caplog.at_level("INFO"):
        response = client.get("/tasks/")
    assert response.status_code == 200
    line = _finished(caplog)
    assert line["request_id"] == response["X-Request-ID"] and len(line["request_id"]) == 36
    assert line["user_id"] == cast.member.pk and line["route"] == "tasks/" and line["code"] == 200
    assert cast.member.email not in json.dumps(line)


@pytest.mark.django_db
def test_each_request_gets_its_own_id():
    first, second = Client().get("/healthz")["X-Request-ID"], Client().get("/healthz")["X-Request-ID"]
    assert first and second and first != second


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_the_request_id_follows_into_the_task_it_queued(celery_worker_process):
    celery_worker_process.start()
    request_id, token = f"req-{uuid.uuid4()}", uuid.uuid4().hex
    structlog.contextvars.bind_contextvars(request_id=request_id)  # as the request middleware binds it
    try:
        result = ping.delay(token)
    finally:
        structlog.contextvars.clear_contextvars()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and cache.get(f"lindy:ping:{token}") is None:
        time.sleep(0.1)
    assert cache.get(f"lindy:ping:{token}") is not None, celery_worker_process.log()
    lines = []
    while time.monotonic() < deadline and not lines:  # the worker writes its success line just after
        lines = [json.loads(line) for line in celery_worker_process.log().splitlines()
                 if line.startswith("{") and request_id in line]
        time.sleep(0.1)
    assert lines, celery_worker_process.log()
    assert {line["task_id"] for line in lines} == {result.id}
    assert {"task_started", "task_succeeded"} <= {line["event"] for line in lines}
