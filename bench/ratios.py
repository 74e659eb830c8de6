"""Lines for `make bench`. Most measurements are ratios against a baseline measured in the same
run (a trivial view, a bare pass), so a noisy machine moves both sides and does not decide;
a few goals the issue states in absolute units (µs per routing choice, seconds of debounce).

A bench test calls `record(...)` or `record_absolute(...)`; bench/conftest.py prints every
line at the end of the run and makes the run fail when one misses its goal.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

LINES: list[Ratio | Goal] = []


@dataclass(frozen=True)
class Ratio:
    name: str
    value: float
    baseline: float
    goal: float  # the ratio must be at most this
    unit: str = "ms"
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")

    @property
    def passed(self) -> bool:
        return self.ratio <= self.goal

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        note = f"  ({self.note})" if self.note else ""
        return (f"{verdict}  {self.name}: {self.ratio:.1f}× (goal ≤ {self.goal:g}×; "
                f"{self.value:.3f} vs {self.baseline:.3f} {self.unit}){note}")


def record(name: str, value: float, baseline: float, goal: float, unit: str = "ms", note: str = "") -> Ratio:
    ratio = Ratio(name, value, baseline, goal, unit, note)
    LINES.append(ratio)
    print(f"\n{ratio.line()}")
    return ratio


@dataclass(frozen=True)
class Goal:
    """An absolute goal (a throughput the product must sustain), for what has no natural baseline."""

    name: str
    value: float
    goal: float
    unit: str
    at_least: bool = True  # False: the value must be at most the goal
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.value >= self.goal if self.at_least else self.value <= self.goal

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        note = f"  ({self.note})" if self.note else ""
        sign = "≥" if self.at_least else "≤"
        return f"{verdict}  {self.name}: {self.value:.2f} {self.unit} (goal {sign} {self.goal:g} {self.unit}){note}"


def record_goal(name: str, value: float, goal: float, unit: str, at_least: bool = True, note: str = "") -> Goal:
    line = Goal(name, value, goal, unit, at_least, note)
    LINES.append(line)
    print(f"\n{line.line()}")
    return line


def record_absolute(name: str, value: float, goal: float, unit: str, note: str = "") -> Goal:
    """A value that must stay at most `goal` (a latency)."""
    return record_goal(name, value, goal, unit, at_least=False, note=note)


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1] if len(samples) >= 2 else samples[0]


def interleaved(subject: Callable[[], object], baseline: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """Times (ms) of `subject` and `baseline`, alternating so both see the same machine."""
    subject(), baseline()  # warm caches, templates and connections
    a, b = [], []
    for _ in range(runs):
        started = time.perf_counter()
        subject()
        a.append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        baseline()
        b.append(1000 * (time.perf_counter() - started))
    return a, b
