"""Route semaphores and provider budgets when 50 threads share one process, as in a threaded
Celery worker (issue 31): the real gateway and the real anthropic client against a local Messages
API server that counts the calls it has in flight at once, with the real Redis the budgets use."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test import override_settings

from router import budgets, gateway
from router.routing import assign
from router.types import ModelError
from tests.fakes.anthropic_api import FakeAnthropic, message, text_block
from tests.fakes.http import Reply

pytestmark = [pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs Redis"),
              pytest.mark.django_db(transaction=True)]

THREADS = 50
LIMIT = 10
MESSAGES = [{"role": "user", "content": "Is this fine?"}]


class Counting:
    """The model's side: calls in flight now and the most seen at once."""

    def __init__(self, seconds: float):
        self.seconds, self.now, self.most, self.served = seconds, 0, 0, 0
        self._lock = threading.Lock()

    def __call__(self, recorded) -> Reply:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.seconds)
        with self._lock:
            self.now -= 1
            self.served += 1
        return Reply(200, message([text_block("fine")]))


def _in_threads(work) -> list:
    results: list = []
    start = threading.Barrier(THREADS)

    def run():
        start.wait()
        try:
            results.append(work())
        finally:
            connection.close()  # each thread's own connection

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


@pytest.fixture
def model(settings):
    settings.CACHE_KEY_PREFIX = f"threaded-{uuid.uuid4().hex[:8]}"  # slots and buckets of this test alone
    with FakeAnthropic() as fake, override_settings(**fake.settings()):
        yield fake


def test_fifty_threads_on_one_route_never_have_more_than_its_limit_in_flight(model, settings):
    counting = Counting(0.2)
    model.default("POST", "/v1/messages", counting)
    settings.ROUTER_ROUTE_CONCURRENCY = {"validator": LIMIT}
    settings.ROUTER_PROVIDER_BUDGETS = {"default": {"rpm": 0, "tpm": 0}}
    refused = []

    def until_served():
        # What a background run does on BudgetExhausted (queue itself again), without the broker.
        while True:
            try:
                return gateway.complete(route="validator", messages=MESSAGES).text
            except budgets.BudgetExhausted as exc:
                refused.append(exc)
                time.sleep(0.02)

    assert _in_threads(until_served) == ["fine"] * THREADS
    assert counting.served == THREADS
    assert counting.most <= LIMIT  # never more than the route's limit at the model
    assert refused and all("already has 10 calls in flight" in str(exc) for exc in refused)
    assert budgets.in_flight(["validator"]) == {"validator": 0}  # every slot given back


def test_fifty_threads_never_overspend_the_providers_budget(model, settings):
    counting = Counting(0.0)
    model.default("POST", "/v1/messages", counting)
    target = assign("validator").target
    budget = 20
    settings.ROUTER_PROVIDER_BUDGETS = {target.host or target.provider: {"rpm": budget, "tpm": 10_000_000}}
    started = time.monotonic()

    def once():
        with budgets.background():  # a background caller: no wait, BudgetExhausted at once
            try:
                return gateway.complete(route="validator", messages=MESSAGES).text
            except ModelError as exc:
                return type(exc).__name__

    results = _in_threads(once)
    elapsed = time.monotonic() - started
    refilled = int(elapsed * budget / 60) + 1  # what the bucket gained back while the test ran
    served = results.count("fine")
    assert results.count("BudgetExhausted") == THREADS - served
    assert budget <= served <= budget + refilled
    assert counting.served == served  # a refused call never reached the model
