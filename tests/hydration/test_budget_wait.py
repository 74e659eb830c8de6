"""A hydration run that meets an exhausted provider budget goes back to the queue with a
countdown (Celery retry) instead of failing, or calling anyway and meeting 429s."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from hydration import services, tasks
from hydration.models import Run
from lindy import services as core
from router import budgets, gateway
from router.models import ModelCall
from router.providers import offline as offline_provider

from .helpers import team_fs

pytestmark = [pytest.mark.django_db, pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs Redis")]


@pytest.fixture
def online(settings, monkeypatch):
    """Model calls go to the budgeted anthropic provider, answered locally by the offline rules."""
    settings.MODEL_OFFLINE = False
    settings.CACHE_KEY_PREFIX = f"wave-{uuid.uuid4().hex[:8]}"  # fresh buckets
    made: list[str] = []

    def provider_call(request, target):
        made.append(request.route)
        return offline_provider.complete(request, target)

    monkeypatch.setitem(gateway.PROVIDERS, "anthropic", provider_call)
    return made


def _deliver(run_id: int, monkeypatch) -> list[tuple]:
    """One delivery of the hydrate task as a worker runs it; returns what it queued again."""
    from celery.exceptions import Retry

    queued: list[tuple] = []
    monkeypatch.setattr(tasks.hydrate, "apply_async",
                        lambda args=(), kwargs=None, **opts: queued.append((tuple(args), opts.get("countdown"))))
    tasks.hydrate.push_request(id=f"delivery-{uuid.uuid4().hex[:6]}", retries=0, is_eager=False,
                               called_directly=False, args=[run_id], kwargs={})
    try:
        tasks.hydrate.run(run_id)
    except Retry:
        pass
    finally:
        tasks.hydrate.pop_request()
    return queued


def test_an_exhausted_budget_requeues_the_run_and_a_refilled_one_runs_it(online, settings, cast, monkeypatch):
    target = gateway.assign("memory.summarize").target
    key = target.host or target.provider
    settings.ROUTER_PROVIDER_BUDGETS = {key: {"rpm": 3, "tpm": 10_000_000}}
    for _ in range(3):  # other runs of the wave took the whole minute's requests
        assert budgets.take(key, tokens=0) == 0
    core.meeting_create(team=cast.team, owner=cast.admin, title="All-hands", public=True,
                        occurred_at=timezone.now(), notes="We always deploy to staging before prod.")
    run, _ = services.run_trigger(filesystem=team_fs(cast.team), trigger="schedule", enqueue=False)

    queued = _deliver(run.pk, monkeypatch)
    assert len(queued) == 1 and queued[0][0] == (run.pk,)
    assert 0 < queued[0][1] <= 20 + 1  # queued again after the budget's countdown (3 rpm: 20 s a request)
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED and "budget" in run.stage and not run.error
    assert online == [] and not ModelCall.objects.exists()  # no call reached the provider

    # Later, with room in the budget (fresh buckets, enough for the run's few calls), it runs.
    settings.CACHE_KEY_PREFIX = f"wave-{uuid.uuid4().hex[:8]}"
    settings.ROUTER_PROVIDER_BUDGETS = {key: {"rpm": 100, "tpm": 10_000_000}}
    assert _deliver(run.pk, monkeypatch) == []
    run.refresh_from_db()
    assert run.status not in (Run.Status.FAILED, *Run.ACTIVE), run.error
    assert online and online[0] == "memory.summarize"


def test_the_countdown_is_the_budgets_wait(online, settings):
    settings.ROUTER_PROVIDER_BUDGETS = {"acme": {"rpm": 60, "tpm": 10_000_000}}
    with budgets.background():
        for _ in range(60):
            budgets.take_or_wait("acme", tokens=0, max_wait=budgets.default_wait())
        with pytest.raises(budgets.BudgetExhausted) as raised:
            budgets.take_or_wait("acme", tokens=0, max_wait=budgets.default_wait())
    assert 0 < raised.value.retry_after <= 1.01  # one request a second refills
