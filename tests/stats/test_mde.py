"""`harness.stats.mde`: the minimum detectable difference against power computations worked out here, independently
of the module: brute-force sums over every outcome and every sign vector, and simulations of the sign-flip test
under the sign model at the printed MDE."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest

from harness.stats.mde import (
    NO_SPREAD,
    NOT_DETECTABLE,
    SIGN_MODEL,
    SIGN_MODEL_SIMULATED,
    _critical,
    binary_power,
    mde_binary,
    minimum_detectable_difference,
)
from harness.stats.paired import sign_flip_p
from harness.stats.signs import sign_table, smallest_p


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


def _all_sums(sizes: np.ndarray) -> np.ndarray:
    """sum_i s_i m_i over every sign vector s, worked out here (not by the module)."""
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * len(sizes))).reshape(len(sizes), -1).T
    return signs @ sizes


def _brute_power(sizes: np.ndarray, q: float, alpha: float = 0.05) -> float:
    """The exact sign test's power under the sign model by brute force: every sign vector, its probability
    q**plus (1 - q)**minus, counted when its own p (share of vectors at least as extreme) is <= alpha."""
    sums = _all_sums(sizes)
    plus = (np.array(np.meshgrid(*[[1, 0]] * len(sizes))).reshape(len(sizes), -1).T).sum(axis=1)
    p = np.array([np.mean(np.abs(sums) >= abs(t) - 1e-12) for t in sums])
    weight = q ** plus * (1 - q) ** (len(sizes) - plus)
    return float(weight[p <= alpha].sum())


def _sign_model_sample(sizes: np.ndarray, q: float, draws: int, seed: int) -> np.ndarray:
    """`draws` values of sum_i s_i m_i with each sign + with probability q."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((draws, len(sizes))) < q, 1.0, -1.0) @ sizes


def _sizes(differing: int, seed: int) -> np.ndarray:
    """Sizes of differing cases as reciprocal-rank and fractional-recall metrics give them."""
    return np.random.default_rng(seed).choice([1.0, 1 / 2, 1 / 3, 1 / 4, 2 / 3, 1 / 6], differing)


def test_recall_with_one_differing_case_and_rr_with_three_are_not_detectable():
    # Issue #29: recall@1 with D = 1 printed "MDE 0.017" and rr with D = 3 "MDE 0.015" (p 0.237), from a paired t
    # power the sign-flip test does not have: with D differing cases its smallest p is 2 / 2**D, 1 and 0.25 here.
    recall = minimum_detectable_difference([0.5] * 59 + [1.0], [0.5] * 59 + [0.5])
    rr = minimum_detectable_difference([1.0] * 100 + [1 / 2, 1 / 3, 1.0], [1.0] * 100 + [1.0, 1 / 2, 1 / 4])
    for result, differing in ((recall, 1), (rr, 3)):
        assert (result.mde, result.status, result.differing) == (None, NOT_DETECTABLE, differing)
        assert result.method == SIGN_MODEL
    assert smallest_p(5) > 0.05 >= smallest_p(6)
    five, six = (minimum_detectable_difference([0.0] * 50, [0.5] * d + [0.0] * (50 - d)) for d in (5, 6))
    assert (five.status, six.status) == (NOT_DETECTABLE, "ok")
    # 6 cases of one size: only all six one way reaches p <= 0.05, so the power is q**6 + (1 - q)**6
    q = (1 + six.mde / six.largest) / 2
    assert q**6 + (1 - q) ** 6 == pytest.approx(0.8, abs=1e-5) and six.largest == pytest.approx(0.06)


@pytest.mark.parametrize("differing, seed", [(6, 0), (9, 1), (12, 2)])
def test_the_exact_sign_model_power_matches_brute_force(differing, seed):
    sizes = _sizes(differing, seed)
    table = sign_table(sizes)
    for q in (0.5, 0.7, 0.9, 1.0):
        assert table.power(q, 0.05) == pytest.approx(_brute_power(sizes, q), abs=1e-12)


@pytest.mark.parametrize("n, differing, method", [(40, 8, SIGN_MODEL), (120, 14, SIGN_MODEL),
                                                   (195, 40, SIGN_MODEL_SIMULATED)])
def test_the_continuous_mde_has_80_percent_power_by_simulation(n, differing, method):
    # Three points, each checked independently of the module: draw 20,000 sets of signs under the sign model at the
    # printed MDE (q = (1 + mde / mad) / 2), compute each set's two-sided p against the null distribution of the
    # sum (every sign vector for D <= 16; 200,000 random ones above, another seed), count p <= 0.05.
    # Measured: 0.8036, 0.8020, 0.8073 (MDE 0.116 of at most 0.127; 0.039 of 0.051; 0.049 of 0.096).
    sizes = _sizes(differing, n)
    a, b = [0.0] * n, [*sizes, *[0.0] * (n - differing)]
    result = minimum_detectable_difference(a, b)
    assert (result.status, result.method, result.differing) == ("ok", method, differing)
    assert result.largest == pytest.approx(sizes.sum() / n) and result.mde <= result.largest
    q = (1 + result.mde / result.largest) / 2
    null = np.sort(np.abs(_all_sums(sizes) if differing <= 16 else _sign_model_sample(sizes, 0.5, 200_000, 99)))
    observed = np.abs(_sign_model_sample(sizes, q, 20_000, 7))
    p = 1 - np.searchsorted(null, observed - 1e-12 * sizes.sum()) / len(null)
    assert np.mean(p <= 0.05) >= 0.78
    just_below = (1 + (result.mde - 0.01 * result.largest) / result.largest) / 2
    observed = np.abs(_sign_model_sample(sizes, just_below, 20_000, 7))
    p = 1 - np.searchsorted(null, observed - 1e-12 * sizes.sum()) / len(null)
    assert np.mean(p <= 0.05) < 0.8  # and it is the smallest such difference


def test_the_mde_is_computed_with_the_test_compare_runs():
    # Through compare's own p (harness.stats.paired.sign_flip_p): 2,000 runs drawn under the sign model at the MDE
    # of 8 differing cases among 40; the share with p <= 0.05 is the power.
    sizes = _sizes(8, 3)
    result = minimum_detectable_difference([0.0] * 40, [*sizes, *[0.0] * 32])
    q = (1 + result.mde / result.largest) / 2
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(2000):
        d = np.where(rng.random(8) < q, 1.0, -1.0) * sizes
        p, method = sign_flip_p(np.zeros(40), np.concatenate([d, np.zeros(32)]))
        hits += method == "exact" and p <= 0.05
    assert hits / 2000 >= 0.78


def test_many_differing_cases_neither_overflow_nor_take_long():
    # 2 / 2**D underflows to 0 for D in the thousands (it raised OverflowError); equal sizes stay exact at any D
    assert smallest_p(1100) == 2.0 ** -1099 and smallest_p(5000) == 0.0
    equal = minimum_detectable_difference([0.0] * 1500, [0.5] * 1100 + [0.0] * 400)
    assert (equal.status, equal.method, equal.differing) == ("ok", SIGN_MODEL, 1100)
    sizes = _sizes(1100, 9)
    assert minimum_detectable_difference([0.0] * 1500, [*sizes, *[0.0] * 400]).method == SIGN_MODEL_SIMULATED


def test_the_simulated_power_is_seeded():
    sizes = _sizes(30, 4)
    a, b = [0.0] * 90, [*sizes, *[0.0] * 60]
    assert minimum_detectable_difference(a, b, seed=3) == minimum_detectable_difference(a, b, seed=3)
    assert minimum_detectable_difference(a, b).method == SIGN_MODEL_SIMULATED


def test_dispatch_and_statuses():
    binary = minimum_detectable_difference([1, 1, 0, 0, 1] * 8, [1, 0, 0, 1, 1] * 8)
    assert binary.discordance == pytest.approx(0.4) and binary.mde is not None and binary.status == "ok"
    assert (binary.method, binary.differing, binary.largest) == ("exact sign test", 16, pytest.approx(0.4))
    cont = minimum_detectable_difference([0.5, 1.0, 0.25, 1.0] * 3, [1.0, 1.0, 0.5, 0.5] * 3)
    assert cont.method == SIGN_MODEL and cont.discordance is None and 0 < cont.mde <= cont.largest
    same = minimum_detectable_difference([1, 0], [1, 0])
    assert (same.mde, same.status) == (None, NO_SPREAD)
    assert minimum_detectable_difference([0.5], [1.0]).status == "fewer than 2 cases"


def _direct_power(n: int, p_d: float, delta: float, alpha: float = 0.05) -> float:
    """binary_power's sum worked out term by term in exact binomial coefficients (no windows, no steps)."""
    q = (1 + delta / p_d) / 2
    total = 0.0
    for d in range(1, n + 1):
        null = [math.comb(d, w) / 2**d for w in range((d + 1) // 2)]
        ks = [k for k in range(len(null)) if 2 * sum(null[:k + 1]) <= alpha * (1 + 1e-9)]
        if not ks:
            continue
        k = ks[-1]
        rejects = sum(math.comb(d, w) * q**w * (1 - q) ** (d - w) for w in (*range(k + 1), *range(d - k, d + 1)))
        total += math.comb(n, d) * p_d**d * (1 - p_d) ** (n - d) * rejects
    return total


@pytest.mark.parametrize("n, p_d", [(60, 0.3), (400, 0.45), (400, 0.1)])
def test_binary_power_by_steps_equals_the_direct_sum(n, p_d):
    # binary_power sums only the discordant counts and wins within 12 standard deviations and steps from one D to
    # the next (restarting every 64); at 400 cases and p_d 0.45 that is about 240 counts, so several restarts.
    # 1e-11: both this sum and the module's log-factorial table round (the summing before the steps was as far,
    # 1.5e-12 at 400 cases, from a 50-digit decimal sum); the MDE's bisection at 1e-6 does not see it.
    for delta in (0.0, 0.3 * p_d, 0.7 * p_d, p_d):
        assert binary_power(n, p_d, delta) == pytest.approx(_direct_power(n, p_d, delta), abs=1e-11)


def test_the_critical_count_from_a_window_is_the_full_sums():
    logf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, 3001)))))
    for d in (*range(1, 60), 61, 250, 999, 3000):
        w = np.arange((d + 1) // 2)
        lower = np.cumsum(np.exp(logf[d] - logf[w] - logf[d - w] - d * math.log(2)))
        hits = np.nonzero(2 * lower <= 0.05 * (1 + 1e-9))[0]
        assert _critical(d, 0.05, logf) == (int(hits[-1]) if hits.size else None)


def test_beyond_the_cell_budget_the_simulated_mde_is_that_of_shuffled_orders(monkeypatch):
    # 2,000 differing cases of 5 sizes: D x 14,000 draws is past PER_CASE_CELLS, so the null sums come from the
    # counts of + signs per size and the orders from shuffles. The MDE agrees with the one the sorted random keys
    # and sign-by-sign draws give (the per-case scheme, forced here) within the simulation's error, and has 80 %
    # power by an independent simulation of the sign model.
    from harness.stats import signs

    sizes = np.repeat([0.1, 0.25, 0.5, 0.75, 1.0], 400)
    n = 3_000
    a, b = [0.0] * n, [*sizes, *[0.0] * (n - len(sizes))]
    assert len(sizes) * (10_000 + signs.SIMULATED_DRAWS) > signs.PER_CASE_CELLS
    fast = minimum_detectable_difference(a, b)
    monkeypatch.setattr(signs, "PER_CASE_CELLS", 10**12)
    slow = minimum_detectable_difference(a, b)
    assert fast.method == slow.method == SIGN_MODEL_SIMULATED
    assert fast.mde == pytest.approx(slow.mde, rel=0.03) and fast.mde != slow.mde
    q = (1 + fast.mde / fast.largest) / 2
    # drawn 2,500 at a time: the test process stays small (a child process forked later inherits its peak RSS)
    null = np.sort(np.abs(np.concatenate([_sign_model_sample(sizes, 0.5, 2_500, 99 + i) for i in range(20)])))
    observed = np.abs(np.concatenate([_sign_model_sample(sizes, q, 2_500, 7 + i) for i in range(4)]))
    p = 1 - np.searchsorted(null, observed - 1e-12 * sizes.sum()) / len(null)
    assert np.mean(p <= 0.05) == pytest.approx(0.8, abs=0.02)


def test_walking_only_the_window_in_doubt_gives_the_whole_walk():
    # 30,000 differing cases of 4 sizes: the orders walked only between the Hoeffding bands against whole shuffles.
    # Outside the window every whole shuffle reaches the threshold too (the bands hold but for e**-70), and inside
    # both shares agree within their sampling error; the window is a small part of the 30,001 counts.
    from harness.stats import signs

    sizes = np.repeat([0.25, 0.5, 0.75, 1.0], [12_000, 9_000, 6_000, 3_000])
    values, counts = np.unique(sizes, return_counts=True)
    threshold = 1.96 * np.sqrt((sizes**2).sum())
    window = signs._window_hits(values, counts, threshold, np.random.default_rng(0), 400)
    whole = signs._ordered_hits(sizes, threshold, np.random.default_rng(1), 400, sort=False)
    doubt = (window > 0) & (window < 400) | (whole > 0) & (whole < 400)
    walked = np.nonzero(window < 400)[0]
    assert walked.size and walked[-1] - walked[0] < 0.2 * len(sizes)
    assert np.array_equal(window[~doubt], whole[~doubt])
    assert np.abs(window[doubt] - whole[doubt]).max() <= 4 * np.sqrt(400 * 0.25) + 1
    assert np.all(whole[: walked[0]] == 400) and np.all(whole[walked[-1] + 1:] == 400)


def test_many_distinct_sizes_beyond_the_budget_are_shuffled(monkeypatch):
    from harness.stats import signs

    sizes = np.round(np.random.default_rng(8).uniform(0.05, 1.0, 1_600), 6)
    a, b = [0.0] * 2_000, [*sizes, *[0.0] * 400]
    fast = minimum_detectable_difference(a, b)
    monkeypatch.setattr(signs, "PER_CASE_CELLS", 10**12)
    assert fast.mde == pytest.approx(minimum_detectable_difference(a, b).mde, rel=0.03)
