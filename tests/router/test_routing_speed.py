"""The routing choice's cost with a shared cache: a process trusts its table for CHECK_EVERY
(one second), then asks the shared version key once; a user's explicit choices are looked up
for that user only. A change made by another process is seen within about a second."""

from __future__ import annotations

import time
import uuid

import pytest
from django.core.cache import cache

from router import routing
from router.models import ModelChoice, Route, Target

from .helpers import cheap_target, route


class CountingCache:
    """The real cache, counting the calls that reach it (each one a round trip to Redis)."""

    def __init__(self, real):
        self.real, self.calls = real, []

    def __getattr__(self, name):
        attribute = getattr(self.real, name)
        if not callable(attribute):
            return attribute

        def call(*args, **kwargs):
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return call


@pytest.fixture
def counted(monkeypatch):
    counting = CountingCache(cache)
    monkeypatch.setattr(routing, "cache", counting)
    return counting


def _another_process_changed_the_table():
    """What a change made in another process looks like here: new rows (no signal in this
    process) and a new version in the shared cache."""
    cache.set(routing.VERSION_KEY, uuid.uuid4().hex, timeout=None)


@pytest.mark.django_db
def test_many_choices_make_at_most_one_cache_round_trip_a_second(cast, counted):
    route("email.draft")
    ModelChoice.objects.create(user=cast.admin, route="", target=Target.objects.get(name="claude-haiku-4-5-anthropic"))
    users = [cast.member, cast.admin, cast.other_admin, None]
    for user in users:
        routing.assign("email.draft", user)  # warm: the table and these users' choices
    counted.calls.clear()
    started = time.monotonic()
    for _ in range(5_000):
        for user in users:
            routing.assign("email.draft", user)
    elapsed = time.monotonic() - started
    assert len(counted.calls) <= 1 + int(elapsed / routing.CHECK_EVERY), (counted.calls, elapsed)
    assert set(counted.calls) <= {"get"}
    assert routing.assign("email.draft", cast.admin).reason == "explicit_choice"


@pytest.mark.django_db
def test_a_version_bump_in_another_process_is_seen_within_a_second(cast):
    email = route("email.draft")
    target = cheap_target()
    assert routing.assign("email.draft", cast.other_admin).target.name == "claude-sonnet-4-6-anthropic"
    Route.objects.filter(pk=email.pk).update(baseline=target)  # .update(): no signal here
    _another_process_changed_the_table()
    # CHECK_EVERY on an idle machine; the slack lets a loaded one through while "never seen" still fails.
    deadline = time.monotonic() + routing.CHECK_EVERY + 10
    while routing.assign("email.draft", cast.other_admin).target.name != target.name:
        assert time.monotonic() < deadline, "the new baseline was not seen within a second"
        time.sleep(0.05)


@pytest.mark.django_db
def test_another_process_s_choice_is_seen_within_a_second(cast):
    route("email.draft")
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    assert routing.assign("email.draft", cast.other_admin).reason == "baseline"
    ModelChoice.objects.bulk_create([ModelChoice(user=cast.other_admin, route="email.draft", target=haiku)])  # no signal
    _another_process_changed_the_table()
    # CHECK_EVERY on an idle machine; the slack lets a loaded one through while "never seen" still fails.
    deadline = time.monotonic() + routing.CHECK_EVERY + 10
    while routing.assign("email.draft", cast.other_admin).reason != "explicit_choice":
        assert time.monotonic() < deadline, "the new choice was not seen within a second"
        time.sleep(0.05)
    assert routing.assign("email.draft", cast.other_admin).target.name == "claude-haiku-4-5-anthropic"


@pytest.mark.django_db
def test_choices_are_not_part_of_the_table(cast):
    """Each process holds only the choices of the users it served, not everyone's."""
    routing.ensure_defaults()
    haiku = Target.objects.get(name="claude-haiku-4-5-anthropic")
    ModelChoice.objects.create(user=cast.admin, route="", target=haiku)
    routing.assign("agent", cast.member)
    assert not hasattr(routing.table(), "choices")
    assert set(routing._choices) == {cast.member.pk}
