"""`make bench`: the routing choice (router.routing.assign) with Redis as the shared cache.

Prints `routing choice: X µs (goal ≤ 50 µs) PASS/FAIL`: the median cost of one choice in the
steady state (a rollout running, users with and without an explicit choice), next to the cost
of the pure decision alone, measured in the same run. The choice may ask Redis for the table's
version at most once a second, so its cost is close to the decision's.
"""

from __future__ import annotations

import statistics
import time

import pytest
from django.conf import settings
from ratios import record_absolute

GOAL_MICROSECONDS = 50.0
BATCHES, CALLS = 15, 2_000


def _median_microseconds(call) -> float:
    call()
    samples = []
    for _ in range(BATCHES):
        started = time.perf_counter()
        for _ in range(CALLS):
            call()
        samples.append(1e6 * (time.perf_counter() - started) / CALLS)
    return statistics.median(samples)


@pytest.mark.django_db
def test_routing_choice():
    if not settings.REDIS_URL:
        pytest.skip("the routing bench measures the choice with Redis: set REDIS_URL or run a server on 127.0.0.1:6379")
    from lindy.models import Membership
    from router import routing, services
    from router.models import Route, Target
    from tests.factories import TeamFactory, member_of

    routing.ensure_defaults()
    team = TeamFactory(name="Bench")
    users = [member_of(team, Membership.Role.MEMBER, is_internal=(n == 0)) for n in range(4)]
    route = Route.objects.get(name="validator")
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    from tests.router.helpers import offline_evidence

    offline_evidence(route, haiku, "terse")  # a variant the validator builds
    services.rollout_start(route=route, candidate=haiku, candidate_variant="terse")
    services.model_choice_set(user=users[1], target=haiku)

    def choose():
        for user in users:
            routing.assign("validator", user)

    table = routing.table()
    info = table.routes["validator"]
    chosen = {user.pk: routing.user_choices(user.pk) for user in users}

    def decide_only():
        for user in users:
            routing.decide(table, info, user.pk, user.is_internal, chosen[user.pk])

    choice = _median_microseconds(choose) / len(users)
    decision = _median_microseconds(decide_only) / len(users)
    record_absolute("routing choice", choice, GOAL_MICROSECONDS, "µs", note=f"the decision alone: {decision:.1f} µs")
