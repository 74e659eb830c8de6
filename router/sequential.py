"""Always-valid sequential comparisons of two arms, for the guardrail job.

The guardrail job looks at a rollout every few minutes for days. A fixed-sample test checked
that often would roll back a perfectly good candidate far more often than its alpha says. An
always-valid confidence sequence does not: its error rate holds however often, and whenever,
it is looked at. This is the asymptotic confidence sequence of Waudby-Smith et al. (2023,
arXiv:2103.06476, eq. 134 one-sided, rho from eq. 161), the one GrowthBook's Safe Rollouts use
(gbstats/frequentist/tests.py: SequentialOneSidedTreatmentLesserTTest, sequential_rho,
sequential_interval_halfwidth_one_sided), written here in plain Python: a few square roots and
logarithms per metric, no numpy.

Everything is about "goodness" differences (candidate minus baseline, higher is better) and a
margin: the candidate may be worse by up to `margin` and still be acceptable (non-inferiority).
- harm: the whole one-sided sequence lies below -margin (upper bound < -margin): roll back.
- safe: the lower bound is at or above -margin: shown to be within the margin.
- unsure: neither, with the estimate within the margin: no sign of harm yet.
- leaning_worse: neither, with the estimate beyond the margin: not enough evidence yet to
  roll back, and no reason to move more people onto it.

A rollout watches several metrics at once. Each one's sequence at level alpha holds its own
error at alpha, but five of them at alpha each roll back a healthy candidate about twice as
often. `holm` runs Holm's step-down over the family: the metric most certainly worse is tested
at alpha / m (m metrics in the family, untested ones included), the next at alpha / (m - 1)...
so the chance that *any* metric rolls back a candidate within its margins stays under alpha.
With always-valid sequences this holds over every look: the first false rejection needs some
metric's sequence to cross at alpha / m, which each does with probability at most alpha / m
(tests/router/test_family_error.py simulates it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# The sample size around which the sequence is tightest (GrowthBook's default is 5000 users;
# a stage here sees tens to hundreds of scored calls per arm).
DEFAULT_TUNING = 500.0


@dataclass(frozen=True)
class Arm:
    """Summary of one arm: sample size, mean and sample variance of a per-unit value."""

    n: int
    mean: float
    var: float

    @classmethod
    def binary(cls, n: int, successes: float) -> Arm:
        p = successes / n if n else 0.0
        return cls(n=n, mean=p, var=p * (1 - p) * n / (n - 1) if n > 1 else 0.0)


@dataclass(frozen=True)
class ArmComparison:
    verdict: str  # "harm", "safe", "unsure" or "leaning_worse"
    difference: float  # candidate - baseline goodness
    lower: float
    upper: float
    margin: float

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "difference": self.difference, "lower": self.lower, "upper": self.upper,
                "margin": self.margin}


def rho(alpha: float, tuning: float = DEFAULT_TUNING) -> float:
    """The mixture's spread for a one-sided sequence at level alpha (eq. 161, one-sided)."""
    two = 2 * alpha
    return math.sqrt((-2 * math.log(two) + math.log(-2 * math.log(two) + 1)) / tuning)


def halfwidth(s2: float, n: int, alpha: float, tuning: float = DEFAULT_TUNING) -> float:
    """One-sided half-width (eq. 134). `s2` is n times the squared standard error of the
    difference; `n` the total sample of both arms."""
    r2 = rho(alpha, tuning) ** 2
    return math.sqrt(s2 * 2 * (n * r2 + 1) / (n * n * r2) * math.log(1 + math.sqrt(n * r2 + 1) / (2 * alpha)))


def compare(candidate: Arm, baseline: Arm, *, margin: float, alpha: float,
            tuning: float = DEFAULT_TUNING) -> ArmComparison:
    """Candidate vs baseline on a higher-is-better value, with the candidate allowed to be
    worse by `margin`. Both arms need at least two units."""
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be between 0 and 0.5.")
    if candidate.n < 2 or baseline.n < 2:
        raise ValueError("Each arm needs at least two units.")
    difference = candidate.mean - baseline.mean
    se2 = candidate.var / candidate.n + baseline.var / baseline.n
    n = candidate.n + baseline.n
    width = halfwidth(se2 * n, n, alpha, tuning)
    lower, upper = difference - width, difference + width
    if upper < -margin:
        verdict = "harm"
    elif lower >= -margin:
        verdict = "safe"
    elif difference < -margin:
        verdict = "leaning_worse"
    else:
        verdict = "unsure"
    return ArmComparison(verdict=verdict, difference=difference, lower=lower, upper=upper, margin=margin)


def holm(tests: Mapping[str, Callable[[float], ArmComparison]], *, alpha: float,
         family: int) -> dict[str, tuple[ArmComparison, float]]:
    """Holm's step-down across a family of `family` metrics: `tests` maps the ones with enough
    units to a comparison at a given level; the rest count against the family untested (they
    may be tested later in the same sequence). Returns name -> (comparison, level used).

    Step-down with levels instead of p-values: a metric is "harm" at level a exactly when its
    always-valid p-value is at most a (the interval widens as a shrinks), so rejecting every
    metric that is harm at alpha / (family - rejected), until none is, is Holm's procedure."""
    family = max(family, len(tests), 1)
    rejected: dict[str, tuple[ArmComparison, float]] = {}
    while True:
        level = alpha / (family - len(rejected))
        results = {name: (fn(level), level) for name, fn in tests.items() if name not in rejected}
        harm = {name: result for name, result in results.items() if result[0].verdict == "harm"}
        if not harm or len(rejected) + len(harm) >= family:
            return {**rejected, **results}
        rejected.update(harm)


def srm_p_value(observed: dict[str, int], expected_share: dict[str, float]) -> float:
    """Sample-ratio mismatch: the chi-square goodness-of-fit p-value of the units seen per arm
    against the shares the bucketing should produce (two arms: one degree of freedom)."""
    total = sum(observed.values())
    stat = 0.0
    for arm, share in expected_share.items():
        expected = total * share
        if expected > 0:
            stat += (observed.get(arm, 0) - expected) ** 2 / expected
    # Survival function of chi-square with 1 degree of freedom.
    return math.erfc(math.sqrt(stat / 2))
