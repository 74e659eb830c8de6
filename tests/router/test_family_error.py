"""What a rollout's alpha means, by simulation through the guardrail job's own decision rule
(guardrails._checks: per-user aggregates, one always-valid sequence per metric, Holm across the
metrics, the rollout's alpha split across its stages). Pure arithmetic, no database.

- A/A: 2,000 rollouts of a candidate identical to its baseline on 5 metrics (errors, latency,
  cost, an online score, retention), margins at zero (the strictest reading: any sign of "worse"
  counts), two comparable stages of 12 looks each. The share rolled back at any look of any stage
  stays within alpha plus two Monte-Carlo standard errors.
- Power: a candidate whose online score is truly worse by the minimum effect the README states
  (0.10 beyond the 0.05 margin on a pass/fail score) is caught in at least 90 % of rollouts
  within 1,000 users per arm, half of them by 500; the test prints the figures.

Per-user values are drawn in batches with their exact distributions (a batch of normal values
as its sum and sample variance, a batch of pass/fail values as random bits), so 2,000 rollouts
take a few seconds."""

from __future__ import annotations

import math
import random
import statistics

from router.models import Rollout
from router.services import guardrails
from router.services.scores import register_metric

ALPHA = 0.05
METRIC = "judge.quality"
STAGES = [{"percent": 25, "min_hours": 0, "min_samples": 0}, {"percent": 50, "min_hours": 0, "min_samples": 0},
          {"percent": 100, "min_hours": 0, "min_samples": 0}]
LOOKS, STEP = 12, 16  # looks per stage, new users per arm between looks

register_metric(METRIC, higher_is_better=True, label="Online judge score of a sampled call")


class Moments:
    """Running count, sum and sum of squares of per-user values."""

    __slots__ = ("n", "s", "q")

    def __init__(self):
        self.n, self.s, self.q = 0, 0.0, 0.0

    def add_normal(self, rng: random.Random, k: int, mu: float, sigma: float) -> None:
        # k normal values: their sum is normal, (k - 1) s^2 / sigma^2 is chi-square(k - 1), independently.
        total = rng.gauss(k * mu, sigma * math.sqrt(k))
        ss = rng.gammavariate((k - 1) / 2, 2 * sigma * sigma)
        self.n, self.s, self.q = self.n + k, self.s + total, self.q + ss + total * total / k

    def add_bits(self, ones: int, k: int) -> None:
        self.n, self.s, self.q = self.n + k, self.s + ones, self.q + ones

    @property
    def mean(self) -> float:
        return self.s / self.n if self.n else 0.0

    @property
    def var(self) -> float:
        return max(0.0, (self.q - self.s * self.s / self.n) / (self.n - 1)) if self.n > 1 else 0.0


def _bits(rng: random.Random, k: int, p: float) -> int:
    """How many of k pass/fail users pass, each with probability p (exact for 1/4, 1/2, 3/4;
    otherwise one draw per user)."""
    if p == 0.5:
        return rng.getrandbits(k).bit_count()
    if p == 0.25:
        return (rng.getrandbits(k) & rng.getrandbits(k)).bit_count()
    if p == 0.75:
        return (rng.getrandbits(k) | rng.getrandbits(k)).bit_count()
    return sum(rng.random() < p for _ in range(k))


def _arm(rng: random.Random, arm: dict, k: int, *, error: float, score: float, retained: float) -> None:
    arm["err"].add_bits(_bits(rng, k, error), k)
    arm["lat"].add_normal(rng, k, 900.0, 250.0)
    arm["cost"].add_normal(rng, k, 0.002, 0.0005)
    arm["score"].add_bits(_bits(rng, k, score), k)
    arm["ret"].add_bits(_bits(rng, k, retained), k)


def _aggregates(arms: dict) -> tuple[dict, dict, dict]:
    """The three selectors' shapes (arm_calls, arm_scores, arm_retention) from the moments."""
    calls, scores, retention = {}, {METRIC: {}}, {}
    for name, arm in arms.items():
        err, lat, cost = arm["err"], arm["lat"], arm["cost"]
        calls[name] = {"calls": err.n, "errors": int(err.s), "users": err.n, "calls_per_user": 1.0,
                       "error_rate": err.mean, "error_var": err.var, "ok_users": lat.n,
                       "latency_mean": lat.mean, "latency_var": lat.var, "cost_mean": cost.mean, "cost_var": cost.var}
        score = arm["score"]
        scores[METRIC][name] = {"n": score.n, "mean": score.mean, "var": score.var, "calls": score.n}
        ret = arm["ret"]
        retention[name] = {"cohort": ret.n, "retained": int(ret.s), "rate": ret.mean}
    return calls, scores, retention


def _rollout(**margins) -> Rollout:
    fields = {"error_margin": 0.0, "latency_margin": 0.0, "cost_margin": 0.0, "score_margin": 0.0,
              "retention_margin": 0.0, **margins}
    return Rollout(alpha=ALPHA, stages=STAGES, min_scored_calls=10, min_retention_users=10, retention_days=7,
                   **fields)


def test_a_healthy_candidate_is_rolled_back_by_any_of_5_metrics_at_most_alpha_of_the_time():
    rng = random.Random(32)
    rollout = _rollout()
    assert guardrails.stage_alpha(rollout) == ALPHA / 2  # two stages with both arms share the alpha
    runs, corrected = 2000, 0
    for _ in range(runs):
        caught = False
        for _stage in range(2):  # each stage starts its sequences afresh, from its own start
            arms = {name: {key: Moments() for key in ("err", "lat", "cost", "score", "ret")}
                    for name in ("baseline", "candidate")}
            for _look in range(LOOKS):
                for arm in arms.values():
                    _arm(rng, arm, STEP, error=0.25, score=0.5, retained=0.75)
                aggregates = _aggregates(arms)
                checks = guardrails._checks(rollout, *aggregates)
                if any(c["verdict"] == "harm" for c in checks):
                    caught = True
                    break
            if caught:
                break
        corrected += caught
    rate = corrected / runs
    se = math.sqrt(ALPHA * (1 - ALPHA) / runs)
    print(f"A/A, 5 metrics, 2 stages x {LOOKS} looks: rolled back {corrected}/{runs} = {rate:.2%} "
          f"(bound alpha + 2 SE = {ALPHA + 2 * se:.2%})")
    assert rate <= ALPHA + 2 * se


def test_a_candidate_worse_by_the_minimum_effect_is_caught_and_how_soon():
    """The README's minimum effect: an online pass/fail score 0.10 worse than the 0.05 margin
    (0.80 on the baseline, 0.65 on the candidate), all else equal, default margins elsewhere."""
    rng = random.Random(7)
    rollout = _rollout(score_margin=0.05, error_margin=0.05, latency_margin=0.25, cost_margin=0.5,
                       retention_margin=0.10)
    runs, step, looks = 200, 25, 40
    caught_at = []
    for _ in range(runs):
        arms = {name: {key: Moments() for key in ("err", "lat", "cost", "score", "ret")}
                for name in ("baseline", "candidate")}
        for look in range(1, looks + 1):
            for name, arm in arms.items():
                _arm(rng, arm, step, error=0.25, score=0.8 if name == "baseline" else 0.65, retained=0.75)
            checks = guardrails._checks(rollout, *_aggregates(arms))
            harm = [c["metric"] for c in checks if c["verdict"] == "harm"]
            if harm:
                assert harm == [METRIC]
                caught_at.append(look * step)
                break
    power = len(caught_at) / runs
    median = statistics.median(caught_at)
    p90 = sorted(caught_at)[int(0.9 * len(caught_at)) - 1]
    print(f"worse by 0.10 beyond the margin: caught in {power:.1%} of {runs} rollouts within {looks * step} users "
          f"per arm; median {median:g} users per arm, 90% by {p90} users")
    assert power >= 0.9
    assert median <= 500
