"""`make bench`: hydration overhead for 100 new items on a 500-file file system, model time excluded.

How model time is excluded: the offline provider (router/gateway.PROVIDERS["offline"], which every
model call goes through when LINDY_MODEL_OFFLINE is on) is wrapped with a timer for the run, and
the time spent inside it is subtracted from the run's wall time. What is left is Lindy's own work:
reading the items, building prompts, the memory agent's tool loop, verifying and committing the
revision, marking items. The goal (200 ms) is absolute, from issue 12, so it is recorded as a ratio
against a 200 ms baseline with a goal of 1×."""

from __future__ import annotations

import time

import memory_bench
import pytest
from ratios import record

FILES = 500
ITEMS = 100
GOAL_MS = 200.0


def _build(files: int):
    from django.utils import timezone

    from lindy import services as lindy_services
    from lindy.models import Membership, Team, User
    from memory import services as memory_services
    from memory.models import FileSystem
    from memory.services import Change

    stamp = time.time_ns()
    team = Team.objects.create(name=f"Hydration bench {stamp}")
    user = User.objects.create_user(email=f"hydrate-{stamp}@example.test", password="bench-pw")
    lindy_services.membership_set(team=team, user=user, role=Membership.Role.MEMBER)
    fs = memory_services.filesystem_for_user(user)
    FileSystem.objects.filter(pk=fs.pk).update(always_loaded_token_budget=10_000_000)
    fs.refresh_from_db()
    path = memory_bench.path_for
    others = files - 2
    index = "# Index\n\n" + "".join(f"- [{path(n)}]({path(n)})\n" for n in range(0, others, 2))
    master = "# Master\n\n" + "".join(f"- [{path(n)}]({path(n)})\n" for n in range(1, others, 2))
    changes = [Change("create", path(n), content=f"# File {n}\n\n{memory_bench.PARAGRAPH}") for n in range(others)]
    changes += [Change("write", "index.md", content=index), Change("create", "master.md", content=master)]
    memory_services.changes_apply(filesystem=fs, changes=changes, author_kind="system", message="Bench build")

    def meetings(n: int, tag: str):
        for i in range(n):
            lindy_services.meeting_create(
                team=team, owner=user, title=f"{tag} sync {i}", occurred_at=timezone.now(),
                notes=f"We always check item {tag}-{i} before release. Jane Park joined Initech as CTO {i}.")

    return fs, meetings


@pytest.mark.django_db
def test_hydration_overhead_for_100_items(monkeypatch):
    from hydration import services
    from hydration.models import Run
    from router import gateway

    fs, meetings = _build(FILES)
    model_seconds = [0.0]
    offline = gateway.PROVIDERS["offline"]

    def timed(request, target):
        started = time.perf_counter()
        try:
            return offline(request, target)
        finally:
            model_seconds[0] += time.perf_counter() - started

    monkeypatch.setitem(gateway.PROVIDERS, "offline", timed)
    meetings(10, "warm")  # a first run warms templates, prompts and caches, as on a live worker
    assert services.run_now_sync(filesystem=fs, trigger="manual").status == Run.Status.SUCCEEDED
    meetings(ITEMS, "new")
    model_seconds[0] = 0.0
    started = time.perf_counter()
    run = services.run_now_sync(filesystem=fs, trigger="manual")
    wall = time.perf_counter() - started
    assert run.status == Run.Status.SUCCEEDED and run.item_count == ITEMS
    overhead_ms = 1000 * (wall - model_seconds[0])
    record(f"hydration overhead, {ITEMS} new items on a {FILES}-file file system", overhead_ms, GOAL_MS, 1.0,
           note=f"absolute goal {GOAL_MS:g} ms; wall {1000 * wall:.0f} ms minus {1000 * model_seconds[0]:.0f} ms "
                "in the offline model")
