"""The guardrails' sequential test: under no difference its false-rollback rate holds at the
rollout's alpha however often the job looks; clear harm is found. Pure arithmetic, no database:
the simulated aggregates go through the guardrail job's own decision rule (guardrails._checks)."""

import math
import random

import pytest

from router.models import Rollout
from router.sequential import Arm, compare, halfwidth, holm, srm_p_value
from router.services import guardrails

ALPHA = 0.05


def _arm_aggregates(calls: int, errors: int) -> dict:
    """selectors.arm_calls's shape, one call per user."""
    rate = errors / calls
    return {"calls": calls, "errors": errors, "users": calls, "error_rate": rate,
            "error_var": rate * (1 - rate) * calls / (calls - 1), "ok_users": calls - errors,
            "latency_mean": 0.0, "latency_var": 0.0, "cost_mean": 0.0, "cost_var": 0.0}


def _score(values: list[float]) -> dict:
    n = len(values)
    mean = sum(values) / n
    return {"n": n, "mean": mean, "var": sum((v - mean) ** 2 for v in values) / (n - 1)}


def _rolled_back(rng: random.Random, rollout: Rollout, p_good: float, p_error: float, looks: int, step: int) -> bool:
    """One rollout watched `looks` times, `step` more calls per arm between looks: True when any
    look decides the candidate is certainly worse."""
    scores = {"baseline": [], "candidate": []}
    errors = {"baseline": 0, "candidate": 0}
    for _ in range(looks):
        for arm in scores:
            for _ in range(step):
                scores[arm].append(float(rng.random() < p_good))
                errors[arm] += rng.random() < p_error
        calls = {arm: _arm_aggregates(len(scores[arm]), errors[arm]) for arm in scores}
        metric_stats = {"judge.quality": {arm: _score(scores[arm]) for arm in scores}}
        retention = {arm: {"cohort": 0, "retained": 0, "rate": 0.0} for arm in scores}
        checks = guardrails._checks(rollout, calls, metric_stats, retention)
        if any(check["verdict"] == "harm" for check in checks):
            return True
    return False


@pytest.mark.parametrize("p_good,p_error", [(0.5, 0.02), (0.8, 0.1), (0.95, 0.05)])
def test_false_rollback_rate_under_no_difference_stays_under_alpha_with_repeated_looks(p_good, p_error):
    # Margins at zero: any sign of "worse" counts, the strictest reading. Two metrics are tested
    # at each look, 30 looks per rollout, so a fixed-sample test would roll back far more often.
    rollout = Rollout(alpha=ALPHA, score_margin=0.0, error_margin=0.0, latency_margin=0.0, cost_margin=0.0,
                      min_scored_calls=10, retention_days=7, retention_margin=0.0, min_retention_users=20)
    rng = random.Random(13)
    runs = 300
    rolled_back = sum(_rolled_back(rng, rollout, p_good, p_error, looks=30, step=10) for _ in range(runs))
    assert rolled_back / runs <= ALPHA, f"{rolled_back} of {runs} rollouts with no difference were rolled back"


def test_a_fixed_sample_test_looked_at_as_often_would_not_hold_its_alpha():
    """Why the sequential test: the same simulation with a plain one-sided z-test at 5 %."""
    rng = random.Random(13)
    runs, bad = 300, 0
    for _ in range(runs):
        c = b = n = 0
        for _ in range(30):
            c += sum(rng.random() < 0.5 for _ in range(10))
            b += sum(rng.random() < 0.5 for _ in range(10))
            n += 10
            cand, base = Arm.binary(n, c), Arm.binary(n, b)
            se = math.sqrt(cand.var / n + base.var / n)
            if se and (cand.mean - base.mean) / se < -1.645:
                bad += 1
                break
    assert bad / runs > 2 * ALPHA


def test_clear_harm_is_found_and_a_tie_is_not():
    worse = compare(Arm.binary(200, 120), Arm.binary(200, 170), margin=0.05, alpha=ALPHA)
    assert worse.verdict == "harm" and worse.upper < -0.05
    tie = compare(Arm.binary(2000, 1700), Arm.binary(2000, 1700), margin=0.05, alpha=ALPHA)
    assert tie.verdict == "safe" and tie.lower >= -0.05
    small_tie = compare(Arm.binary(200, 170), Arm.binary(200, 170), margin=0.05, alpha=ALPHA)
    assert small_tie.verdict == "unsure" and small_tie.lower < -0.05
    leaning = compare(Arm.binary(12, 6), Arm.binary(12, 8), margin=0.05, alpha=ALPHA)
    assert leaning.verdict == "leaning_worse" and leaning.upper > -0.05


def test_the_interval_narrows_as_evidence_grows_and_rejects_bad_input():
    assert halfwidth(0.5, 40, ALPHA) > halfwidth(0.5, 400, ALPHA) > halfwidth(0.5, 4000, ALPHA)
    with pytest.raises(ValueError):
        compare(Arm.binary(1, 1), Arm.binary(10, 5), margin=0, alpha=ALPHA)
    with pytest.raises(ValueError):
        compare(Arm.binary(10, 1), Arm.binary(10, 5), margin=0, alpha=0.7)


def test_sample_ratio_mismatch():
    assert srm_p_value({"candidate": 50, "baseline": 50}, {"candidate": 0.5, "baseline": 0.5}) == 1.0
    assert srm_p_value({"candidate": 80, "baseline": 20}, {"candidate": 0.5, "baseline": 0.5}) < 1e-6
    assert srm_p_value({"candidate": 11, "baseline": 89}, {"candidate": 0.1, "baseline": 0.9}) > 0.5


def test_holm_tests_the_family_at_alpha_over_its_size_and_steps_down():
    """A difference harm at alpha alone is not harm in a family of five; once the clearest metric
    is rejected at alpha/5, the next is tested at alpha/4."""
    def at(candidate, baseline):
        return lambda level: compare(candidate, baseline, margin=0.0, alpha=level)

    borderline = (Arm.binary(300, 130), Arm.binary(300, 165))  # harm at 0.05 on its own, not at 0.01
    assert compare(*borderline, margin=0.0, alpha=ALPHA).verdict == "harm"
    alone = holm({"score": at(*borderline)}, alpha=ALPHA, family=5)
    assert alone["score"][0].verdict != "harm" and alone["score"][1] == ALPHA / 5
    clear = (Arm.binary(300, 60), Arm.binary(300, 240))
    both = holm({"clear": at(*clear), "score": at(*borderline)}, alpha=ALPHA, family=2)
    assert both["clear"] == (both["clear"][0], ALPHA / 2) and both["clear"][0].verdict == "harm"
    assert both["score"][1] == ALPHA  # stepped down: one hypothesis left
    assert holm({}, alpha=ALPHA, family=0) == {}
