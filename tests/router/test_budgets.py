"""Provider budgets and route concurrency against the real Redis the tests use."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.conf import settings as django_settings

from router import budgets, gateway
from router.providers import offline as offline_provider
from router.types import ModelError

# Budgets a superuser set travel with the routing table, which is loaded from the database.
pytestmark = [pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs Redis"), pytest.mark.django_db]


@pytest.fixture
def provider(settings):
    """A provider name no other test shares (buckets live in Redis across tests)."""
    name = f"acme-{uuid.uuid4().hex[:8]}"
    settings.ROUTER_PROVIDER_BUDGETS = {"default": {"rpm": 0, "tpm": 0}, name: {"rpm": 10, "tpm": 1_000_000}}
    return name


def test_two_threads_drawing_from_one_bucket_never_exceed_it(provider):
    now = time.time()
    taken: list[bool] = []
    start = threading.Barrier(2)

    def draw():
        from django.db import connection

        start.wait()
        try:
            for _ in range(15):
                taken.append(budgets.take(provider, tokens=10, now=now) == 0)
        finally:
            connection.close()  # each thread's own connection

    threads = [threading.Thread(target=draw) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(taken) == 30 and sum(taken) == 10


def test_buckets_refill_over_time(provider, settings):
    settings.ROUTER_PROVIDER_BUDGETS = {provider: {"rpm": 60, "tpm": 600}}  # 1 request/s, 10 tokens/s
    t0 = time.time()
    assert budgets.take(provider, tokens=600, now=t0) == 0
    assert budgets.take(provider, tokens=100, now=t0) == pytest.approx(10, abs=0.01)  # tokens are short
    assert budgets.take(provider, tokens=100, now=t0 + 5) == pytest.approx(5, abs=0.01)
    assert budgets.take(provider, tokens=100, now=t0 + 10) == 0
    # A refused take took nothing: at t0 + 10 the request bucket is full again (60), less the call
    # that just went through.
    for _ in range(59):
        assert budgets.take(provider, tokens=0, now=t0 + 10) == 0
    assert budgets.take(provider, tokens=0, now=t0 + 10) == pytest.approx(1, abs=0.3)
    assert budgets.take(provider, tokens=0, now=t0 + 11) == 0


def test_offline_is_unlimited_and_an_unreachable_redis_allows_the_call(provider, settings):
    assert budgets.budget_for("offline") is None
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    for _ in range(20):
        assert budgets.take(provider, tokens=1) == 0
    with budgets.route_slot("agent", limit=1):
        with budgets.route_slot("agent", limit=1):
            pass


@pytest.fixture
def online(settings, monkeypatch):
    """Calls go to the (budgeted) anthropic provider, answered locally by the offline rules."""
    settings.MODEL_OFFLINE = False
    made: list[str] = []

    def provider_call(request, target):
        made.append(request.route)
        return offline_provider.complete(request, target)

    monkeypatch.setitem(gateway.PROVIDERS, "anthropic", provider_call)
    return made


@pytest.mark.django_db
def test_an_interactive_call_waits_briefly_then_fails_closed(online, settings, cast):
    from router.routing import assign

    host = assign("validator", cast.member).target
    key = host.host or host.provider
    settings.ROUTER_PROVIDER_BUDGETS = {key: {"rpm": 1, "tpm": 1_000_000}}
    settings.CACHE_KEY_PREFIX = f"budget-test-{uuid.uuid4().hex[:8]}"
    settings.ROUTER_BUDGET_INTERACTIVE_WAIT_SECONDS = 0.2
    messages = [{"role": "user", "content": "Is this fine?"}]
    gateway.complete(route="validator", user=cast.member, messages=messages)
    started = time.monotonic()
    with pytest.raises(ModelError, match="budget .* is used up") as raised:
        gateway.complete(route="validator", user=cast.member, messages=messages)
    assert isinstance(raised.value, budgets.BudgetExhausted) and raised.value.retry_after > 0.2
    # Failed after its brief wait, not after the minute the budget takes to refill (the bound is
    # loose so a loaded machine can't fail it; the gap to a minute is what it tells apart).
    assert time.monotonic() - started < 10
    assert online == ["validator"]  # the refused call never reached the provider


def test_a_route_slot_is_released_on_exception_and_expires_after_a_kill(settings):
    settings.CACHE_KEY_PREFIX = f"slot-test-{uuid.uuid4().hex[:8]}"
    with pytest.raises(RuntimeError):
        with budgets.route_slot("agent", limit=1):
            with pytest.raises(budgets.BudgetExhausted, match="already has 1 calls in flight"):
                with budgets.route_slot("agent", limit=1):
                    pass
            raise RuntimeError("the provider call blew up")
    with budgets.route_slot("agent", limit=1):  # released by the exception
        pass
    # A worker killed inside the block never releases its slot: it expires instead.
    t0 = time.time()
    killed = budgets.route_slot("agent", limit=1, expiry=30, now=t0)
    killed.__enter__()
    with pytest.raises(budgets.BudgetExhausted):
        with budgets.route_slot("agent", limit=1, now=t0 + 10):
            pass
    with budgets.route_slot("agent", limit=1, now=t0 + 31):
        pass


@pytest.mark.django_db
def test_a_background_wave_of_calls_against_a_smaller_bucket_queues_the_rest(online, settings, cast):
    from router.routing import assign

    target = assign("memory.summarize", cast.member).target
    key = target.host or target.provider
    settings.CACHE_KEY_PREFIX = f"wave-test-{uuid.uuid4().hex[:8]}"
    settings.ROUTER_PROVIDER_BUDGETS = {key: {"rpm": 4, "tpm": 10_000_000}}
    messages = [{"role": "user", "content": "<item id=\"1\">We deploy on Fridays.</item>"}]
    served, requeued = 0, []
    with budgets.background():
        for _ in range(10):
            try:
                gateway.complete(route="memory.summarize", user=cast.member, messages=messages)
                served += 1
            except budgets.BudgetExhausted as exc:
                requeued.append(exc.retry_after)
    assert served == 4 and len(requeued) == 6
    assert all(0 < wait <= 15 for wait in requeued)  # 4 a minute: one every 15 s
    assert online == ["memory.summarize"] * 4  # the provider never saw the other six
