"""The time a run spends outside the model (issue 31 part 4), for the CPU benches.

The offline provider (router.gateway.PROVIDERS["offline"], which every model call goes through
when LINDY_MODEL_OFFLINE is on) stands for the model: it answers at once, by rules. `measure`
wraps it with a clock for the run and subtracts what was spent inside it, both in CPU time
(time.process_time: this process, every thread, not the database server's) and in wall time. The
queries are those of the run's own connection (django.test.utils.CaptureQueriesContext), a
figure the machine's load does not move.

    LINDY_BENCH_PROFILE=1 make bench   # also prints a cProfile (CPU time) of each measured run
    LINDY_BENCH_PROFILE=var/prof make bench   # ... and saves each in that folder, for pstats
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    cpu_ms: float  # process CPU outside the model
    wall_ms: float  # wall time outside the model
    model_cpu_ms: float
    model_wall_ms: float
    queries: int
    model_calls: int


class ModelClock:
    """Wraps the offline provider with a CPU and a wall clock while installed."""

    def __init__(self, monkeypatch):
        from router import gateway

        self.cpu = self.wall = 0.0
        self.calls = 0
        offline = gateway.PROVIDERS["offline"]

        def timed(request, target):
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return offline(request, target)
            finally:
                self.cpu += time.process_time() - cpu
                self.wall += time.perf_counter() - wall
                self.calls += 1

        monkeypatch.setitem(gateway.PROVIDERS, "offline", timed)

    def reset(self) -> None:
        self.cpu = self.wall = 0.0
        self.calls = 0


def measure(clock: ModelClock, run: Callable[[], object], label: str = "") -> tuple[Sample, object]:
    """Run `run` once under the clock: its time outside the model and its queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    # CPU time, as the figure it explains (wall time would be mostly waiting on the database).
    profile = cProfile.Profile(time.process_time) if os.environ.get("LINDY_BENCH_PROFILE") else None
    clock.reset()
    with CaptureQueriesContext(connection) as queries:
        cpu, wall = time.process_time(), time.perf_counter()
        if profile is not None:
            profile.enable()
        result = run()
        if profile is not None:
            profile.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profile is not None:
        _print_profile(profile, label)
    sample = Sample(cpu_ms=1000 * (cpu - clock.cpu), wall_ms=1000 * (wall - clock.wall),
                    model_cpu_ms=1000 * clock.cpu, model_wall_ms=1000 * clock.wall,
                    queries=len(queries), model_calls=clock.calls)
    return sample, result


def median(samples: list[Sample]) -> Sample:
    """Each figure's median over the samples (the machine is shared: one sample can be unlucky)."""
    return Sample(*(statistics.median(getattr(s, name) for s in samples) for name in Sample.__dataclass_fields__))


def describe(sample: Sample, runs: int) -> str:
    return (f"median of {runs}; wall {sample.wall_ms:.0f} ms outside the model; "
            f"{sample.queries:.0f} queries; {sample.model_calls:.0f} model calls taking "
            f"{sample.model_cpu_ms:.0f} ms CPU in the offline model")


def _print_profile(profile: cProfile.Profile, label: str) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(30)
    print(f"\n--- profile: {label} ---\n{out.getvalue()}")
    folder = os.environ.get("LINDY_BENCH_PROFILE", "")
    if folder not in ("", "1"):
        os.makedirs(folder, exist_ok=True)
        profile.dump_stats(os.path.join(folder, "".join(c if c.isalnum() else "-" for c in label) + ".prof"))
