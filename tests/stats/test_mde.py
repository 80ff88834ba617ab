"""`harness.stats.mde`: the minimum detectable difference against exact power computations worked out here,
independently of the module (brute-force sums over every outcome, and a simulation of the t-test)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest

from harness.stats.mde import (
    NO_SPREAD,
    NOT_DETECTABLE,
    mde_binary,
    mde_continuous,
    minimum_detectable_difference,
    t_quantile,
)


@lru_cache(maxsize=None)
def _sign_flip_p(d: int, gap: int) -> float:
    """Exact two-sided sign-flip p for d differences of +-1 with |#plus - #minus| = gap: the share of the 2**d
    sign vectors whose |sum| is at least gap (counted by how many signs are +)."""
    return sum(math.comb(d, plus) for plus in range(d + 1) if abs(2 * plus - d) >= gap) / 2**d


def exact_power(n: int, discordant: int, delta: float, alpha: float = 0.05) -> float:
    """Power of the two-sided exact sign test over n cases when P(B better) = (p_d + delta) / 2 and
    P(B worse) = (p_d - delta) / 2, p_d = discordant / n: the trinomial probability of every outcome (w better,
    l worse, the rest tied) whose sign-flip p is <= alpha, summed."""
    p_d = discordant / n
    better, worse, tie = (p_d + delta) / 2, (p_d - delta) / 2, 1 - p_d
    total = 0.0
    for w in range(n + 1):
        for lost in range(n + 1 - w):
            if w + lost and _sign_flip_p(w + lost, abs(w - lost)) <= alpha:
                total += math.comb(n, w) * math.comb(n - w, lost) * better**w * worse**lost * tie ** (n - w - lost)
    return total


@pytest.mark.parametrize("n, discordant", [(18, 4), (162, 3)])
def test_too_few_discordant_cases_are_not_detectable(n, discordant):
    # The largest possible difference is p_d (every differing case going B's way); even it has < 80 % power.
    assert exact_power(n, discordant, discordant / n) < 0.8
    assert mde_binary(n, discordant / n) is None
    a, b = [1] * n, [0] * discordant + [1] * (n - discordant)
    result = minimum_detectable_difference(a, b)
    assert (result.mde, result.status, result.method) == (None, NOT_DETECTABLE, "exact sign test")


def test_the_readme_example_has_19_percent_power_at_most():
    # 18 cases, 4 differ: the normal approximation's MDE was 0.29 > p_d = 0.222; the exact test's power at
    # delta = p_d is 19 % (the figure).
    assert exact_power(18, 4, 4 / 18) == pytest.approx(0.193, abs=0.001)


def test_mde_at_100_cases_20_percent_discordant_has_exactly_80_percent_power():
    mde = mde_binary(100, 0.2)
    assert mde is not None and mde <= 0.2
    assert exact_power(100, 20, mde) >= 0.8 > exact_power(100, 20, mde - 0.002)
    assert mde == pytest.approx(0.1277, abs=5e-4)  # a little above the normal approximation's 0.124


def test_mde_is_never_above_the_discordance():
    for n, discordant in ((8, 8), (10, 6), (30, 7), (40, 6)):
        mde = mde_binary(n, discordant / n)
        if mde is not None:
            assert mde <= discordant / n
            assert exact_power(n, discordant, mde) >= 0.8


def test_continuous_mde_uses_the_t_distribution():
    assert t_quantile(0.975, 4) == pytest.approx(2.776445, abs=1e-5)  # tables of Student's t
    assert t_quantile(0.975, 9) == pytest.approx(2.262157, abs=1e-5)
    assert t_quantile(0.975, 1) == pytest.approx(12.706205, abs=1e-4)
    mde = mde_continuous(5, 1.0)
    # Simulate the paired t-test at n = 5 with a true difference of mde and s = 1: it rejects 80 % of the time.
    rng = np.random.default_rng(0)
    d = rng.normal(mde, 1.0, size=(400_000, 5))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(5))
    assert np.mean(np.abs(t) > 2.776445) == pytest.approx(0.8, abs=0.004)
    normal = (1.959964 + 0.841621) / math.sqrt(5)
    assert mde / normal == pytest.approx(1.342, abs=0.005)  # z instead of t: 34 % too optimistic at n = 5
    assert mde_continuous(400, 1.0) == pytest.approx((1.959964 + 0.841621) / 20, rel=0.005)  # large n: z


def test_dispatch_and_statuses():
    binary = minimum_detectable_difference([1, 1, 0, 0, 1] * 8, [1, 0, 0, 1, 1] * 8)
    assert binary.discordance == pytest.approx(0.4) and binary.mde is not None and binary.status == "ok"
    cont = minimum_detectable_difference([0.5, 1.0, 0.25, 1.0], [1.0, 1.0, 0.5, 0.5])
    assert cont.method == "paired t" and cont.discordance is None and cont.mde > 0
    same = minimum_detectable_difference([1, 0], [1, 0])
    assert (same.mde, same.status) == (None, NO_SPREAD)  # no case differs: nothing to scale by
