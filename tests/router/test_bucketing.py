"""Sticky, monotonic bucketing over 100,000 synthetic users, and who takes precedence."""

from decimal import Decimal

import pytest

from router.routing import ALL_ROUTES, BUCKETS, RolloutInfo, RouteInfo, Table, TargetInfo, bucket_of, decide

USERS = range(1, 100_001)
PERCENTS = [1, 5, 10, 25, 50, 75, 100]


def _target(id, name):
    return TargetInfo(id=id, name=name, provider="anthropic", model=name, input_price=Decimal(1),
                      output_price=Decimal(1), cache_write_price=Decimal(0), cache_read_price=Decimal(0))


def _decide(table, route, user_id, is_internal, choices=None):
    return decide(table, route, user_id, is_internal, (choices or {}).get(user_id))


def _table(percent, *, include_internal=True):
    rollout = RolloutInfo(id=7, salt="salt-7", candidate_id=2, candidate_variant="tuned", percent=Decimal(percent),
                          include_internal=include_internal, status="running")
    route = RouteInfo(name="email.draft", baseline_id=1, baseline_variant="default", max_tokens=100, rollout=rollout)
    table = Table(targets={1: _target(1, "sonnet"), 2: _target(2, "flash"), 3: _target(3, "haiku")},
                  routes={"email.draft": route})
    return table, route


def test_buckets_are_stable_and_in_range():
    assert bucket_of("salt-7", 42) == bucket_of("salt-7", 42)
    assert all(0 <= bucket_of("s", u) < BUCKETS for u in range(1000))
    # Another rollout shuffles users independently.
    assert sum(bucket_of("a", u) == bucket_of("b", u) for u in range(1000)) < 10


def test_percentages_within_one_point_and_monotonic():
    previous: set[int] = set()
    for percent in PERCENTS:
        table, route = _table(percent)
        on = {u for u in USERS if decide(table, route, u, False).arm == "candidate"}
        share = 100 * len(on) / len(USERS)
        assert abs(share - percent) <= 1, (percent, share)
        # Nobody already on the candidate leaves it when the percentage rises.
        assert previous <= on
        previous = on
    assert len(previous) == len(USERS)


def test_assignment_is_sticky_across_calls():
    table, route = _table(25)
    first = [decide(table, route, u, False).target.id for u in range(1, 2001)]
    again = [decide(table, route, u, False).target.id for u in range(1, 2001)]
    assert first == again


def test_internal_users_get_the_candidate_first():
    table, route = _table(0.01)
    assert all(decide(table, route, u, True).reason == "internal" for u in range(1, 500))
    assert sum(decide(table, route, u, False).arm == "candidate" for u in range(1, 500)) <= 2
    excluded, route_x = _table(0.01, include_internal=False)
    assert decide(excluded, route_x, 1, True).reason in {"baseline", "bucket"}


def test_explicit_choice_wins_over_internal_and_bucket():
    # User 5 chose haiku for this route, user 6 sonnet for all routes, user 8 the candidate.
    choices = {5: {"email.draft": 3}, 6: {ALL_ROUTES: 1}, 8: {ALL_ROUTES: 2}}
    table, route = _table(100)
    five = _decide(table, route, 5, True, choices)
    assert (five.target.name, five.reason, five.arm, five.prompt_variant) == ("haiku", "explicit_choice", "choice", "default")
    six = _decide(table, route, 6, True, choices)
    assert (six.target.name, six.reason) == ("sonnet", "explicit_choice") and "all routes" in six.explanation
    # Choosing the candidate target gets the candidate's tuned prompt with it.
    assert _decide(table, route, 8, False, choices).prompt_variant == "tuned"


def test_route_choice_beats_all_routes_choice():
    table, route = _table(0)
    assert _decide(table, route, 9, False, {9: {ALL_ROUTES: 1, "email.draft": 3}}).target.name == "haiku"


@pytest.mark.parametrize("percent", [0, 100])
def test_edges(percent):
    table, route = _table(percent)
    arms = {decide(table, route, u, False).arm for u in range(1, 3000)}
    assert arms == ({"baseline"} if percent == 0 else {"candidate"})
