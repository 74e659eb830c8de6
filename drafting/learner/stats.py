"""The learner's gate: a one-sided sign test on the judge's decided comparisons.

Each held-out pair gives one comparison between the draft replayed with the current context
and the draft replayed with the proposed one. A comparison is a *win* when the judge prefers
the proposed draft in both position orders, a *loss* when it prefers the current one in both,
and a *tie* otherwise (the orders disagree, the judge called it even, or the two replays are
the same text). Ties carry no evidence about direction and are left out, as the sign test does.

Under the null hypothesis (the edit does not help) a decided comparison is a win with
probability 1/2, so the p-value of `wins` out of `n = wins + losses` is the upper binomial tail
P(X >= wins | n, 1/2). The edit is accepted when wins > losses and p <= alpha (0.1), with at
least `min_decided` (5) decided comparisons; below that minimum the run waits for more pairs.
(scipy.stats.binomtest(wins, n, 0.5, alternative="greater") gives the same number; scipy is not
a dependency, and the exact tail is four lines.)

Note what 5 decided comparisons can and cannot show at alpha = 0.1: 5 wins of 5 give
p = 1/32 = 0.031, 4 of 5 give p = 6/32 = 0.19 (not enough), 6 of 7 give p = 0.0625.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, sqrt

ACCEPT = "accepted"
REJECT = "rejected"
WAIT = "waiting"


def sign_test_p(wins: int, losses: int) -> float:
    """One-sided exact p-value: P(X >= wins) for X ~ Binomial(wins + losses, 1/2)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(comb(n, k) for k in range(wins, n + 1)) / 2 ** n


@dataclass(frozen=True)
class GateResult:
    decision: str  # ACCEPT, REJECT or WAIT
    wins: int
    losses: int
    ties: int
    p_value: float
    reason: str


def gate(*, wins: int, losses: int, ties: int, alpha: float = 0.1, min_decided: int = 5) -> GateResult:
    decided = wins + losses
    p = sign_test_p(wins, losses)
    if decided < min_decided:
        return GateResult(WAIT, wins, losses, ties, p,
                          f"{decided} decided comparison(s) ({ties} tie(s)): fewer than the {min_decided} the "
                          "sign test needs; waiting for more pairs.")
    if wins > losses and p <= alpha:
        return GateResult(ACCEPT, wins, losses, ties, p,
                          f"{wins} wins, {losses} losses, {ties} ties: one-sided sign test p = {p:.3f} <= {alpha}.")
    if wins <= losses:
        why = f"the edit did not win more often than it lost ({wins} wins, {losses} losses, {ties} ties)"
    else:
        why = f"{wins} wins, {losses} losses, {ties} ties is not significant (p = {p:.3f} > {alpha})"
    return GateResult(REJECT, wins, losses, ties, p, f"Rejected: {why}.")


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval (95 % by default) of a proportion: honest at small n and at 0 or
    1, where the normal approximation collapses to a point. None without observations."""
    if n <= 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
