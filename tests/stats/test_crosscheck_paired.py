"""Cross-check tier (`python -m pytest -m crosscheck`, needs `pip install -e '.[crosscheck]'`): compare's p, its
interval for 0/1 metrics (Tango's, re-derived with scipy's optimiser and root finder) and the minimum detectable
difference against scipy (`binomtest`, `permutation_test`, `binom`), and the judge's precision and recall against
scikit-learn, on random tables."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from harness.stats.mde import binary_power, mde_binary, minimum_detectable_difference
from harness.stats.paired import paired_stats
from harness.stats.precision_recall import per_category, wilson_interval

pytestmark = pytest.mark.crosscheck
VERDICTS = ("supported", "unsupported", "contradicted")


def _scipy_sign_flip_p(d: np.ndarray) -> float:
    """scipy's exact sign-flip test of the differing cases: P(|mean| >= observed) over every sign vector."""
    stats = pytest.importorskip("scipy.stats")
    nonzero = np.append(d[d != 0], 0.0)  # a tie changes nothing, and scipy needs two observations
    result = stats.permutation_test((nonzero,), lambda x, axis: np.abs(np.mean(x, axis=axis)), vectorized=True,
                                    permutation_type="samples", alternative="greater", n_resamples=np.inf)
    return float(result.pvalue)


@pytest.mark.parametrize("seed", range(40))
def test_a_01_metric_p_is_scipys_binomtest_at_any_n(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(seed)
    n = rng.randint(2, 400)
    wins = rng.randint(0, n // 2)
    losses = rng.randint(0, n - wins)
    a = np.array([0.0] * wins + [1.0] * losses + [rng.choice((0.0, 1.0)) for _ in range(n - wins - losses)])
    b = np.concatenate([np.ones(wins), np.zeros(losses), a[wins + losses:]])
    s = paired_stats(a, b, resamples=100)
    assert s.p_method == "exact-binomial"
    expected = 1.0 if wins + losses == 0 else stats.binomtest(wins, wins + losses).pvalue
    assert s.p_value == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_up_to_16_differing_cases_p_is_scipys_exact_permutation_test(seed):
    pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(16, 300))
    d = np.zeros(n)
    differing = int(rng.integers(1, 17))
    d[:differing] = rng.choice([-1.0, 1.0], differing) * rng.choice([1.0, 0.5, 1 / 3, 0.25, 2 / 3, 0.2], differing)
    s = paired_stats(np.zeros(n), d, resamples=50)  # few resamples: the exact p needs none
    assert s.p_method in ("exact", "exact-binomial")
    assert s.p_value == pytest.approx(_scipy_sign_flip_p(d), rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_a_monte_carlo_p_is_within_sampling_error_of_scipys(seed):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    d = rng.normal(0.08, 0.3, 40)
    ours = paired_stats(np.zeros(40), d, seed=seed).p_value
    theirs = stats.permutation_test((d,), lambda x, axis: np.abs(np.mean(x, axis=axis)), vectorized=True,
                                    permutation_type="samples", alternative="greater", n_resamples=200_000,
                                    random_state=seed + 100).pvalue
    assert abs(ours - theirs) <= 4 * math.sqrt(theirs * (1 - theirs) / 10_000) + 2e-4


def _scipy_tango_interval(wins: int, losses: int, n: int) -> tuple[float, float]:
    """Tango's score interval re-derived with scipy, without the closed form: for each delta, the loss probability
    q that maximises the multinomial likelihood under P(win) = q + delta is found numerically
    (`minimize_scalar`, bounded), the score statistic is (W - L - n delta) / sqrt(n (2q + delta (1 - delta))), and
    each end is the root of |Z| = 1.96 (`brentq`)."""
    optimize = pytest.importorskip("scipy.optimize")
    special = pytest.importorskip("scipy.special")
    ties = n - wins - losses

    def z(delta: float) -> float:
        low, high = max(0.0, -delta), (1 - delta) / 2

        def minus_loglik(q: float) -> float:
            return -(special.xlogy(wins, q + delta) + special.xlogy(losses, q)
                     + special.xlogy(ties, max(1 - 2 * q - delta, 0.0)))

        q = optimize.minimize_scalar(minus_loglik, bounds=(low, high), method="bounded",
                                     options={"xatol": 1e-13}).x if high > low else low
        return (wins - losses - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))

    observed, edge = (wins - losses) / n, 1 - 1e-9
    ends = []
    for target, end in ((1.959963984540054, -edge), (-1.959963984540054, edge)):
        ends.append(end if (z(end) - target) * (z(observed) - target) > 0
                    else optimize.brentq(lambda d, t=target: z(d) - t, min(end, observed), max(end, observed),
                                         xtol=1e-12))
    return ends[0], ends[1]


@pytest.mark.parametrize("seed", range(40))
def test_tangos_interval_matches_a_scipy_rederivation(seed):
    # Random 2x2 tables from 1 to 400 cases, many with few discordant cases or all of them one way.
    rng = random.Random(seed)
    n = rng.randint(1, 400)
    differing = rng.randint(0, min(n, rng.choice((5, 20, n))))
    wins = rng.choice((0, differing, rng.randint(0, differing)))
    a = np.array([0.0] * wins + [1.0] * (differing - wins) + [1.0] * (n - differing))
    b = np.array([1.0] * wins + [0.0] * (differing - wins) + [1.0] * (n - differing))
    s = paired_stats(a, b, resamples=1)
    assert s.ci_method == "Tango score"
    assert (s.ci_low, s.ci_high) == pytest.approx(_scipy_tango_interval(wins, differing - wins, n), abs=1e-6)


def _scipy_power(sizes: np.ndarray):
    """q -> the exact power under the sign model with scipy's test: every sign vector, weighted by its
    probability, counted when scipy's exact permutation p is <= 0.05 (each p computed once)."""
    vectors = [np.array([1.0 if bits >> i & 1 else -1.0 for i in range(len(sizes))]) for bits in range(2 ** len(sizes))]
    rejected = [int((v > 0).sum()) for v in vectors if _scipy_sign_flip_p(v * sizes) <= 0.05]
    return lambda q: sum(q ** plus * (1 - q) ** (len(sizes) - plus) for plus in rejected)


@pytest.mark.parametrize("differing, seed", [(6, 0), (8, 1), (10, 2)])
def test_the_continuous_mde_has_80_percent_power_under_scipys_test(differing, seed):
    pytest.importorskip("scipy.stats")
    sizes = np.random.default_rng(seed).choice([1.0, 0.5, 1 / 3, 0.25, 2 / 3], differing)
    n = 50
    result = minimum_detectable_difference([0.0] * n, [*sizes, *[0.0] * (n - differing)])
    q = (1 + result.mde / result.largest) / 2
    power = _scipy_power(sizes)
    assert power(q) >= 0.8 - 1e-6
    assert power(q - 1e-4) < 0.8  # the smallest such difference


@pytest.mark.parametrize("n, discordant", [(40, 12), (100, 20), (60, 9)])
def test_the_binary_mde_has_80_percent_power_under_scipys_binomtest(n, discordant):
    stats = pytest.importorskip("scipy.stats")
    p_d = discordant / n
    rejects = {d: [w for w in range(d + 1) if stats.binomtest(w, d).pvalue <= 0.05 * (1 + 1e-9)]
               for d in range(1, n + 1)}

    def power(delta: float) -> float:
        q = (1 + delta / p_d) / 2
        return sum(stats.binom.pmf(d, n, p_d) * stats.binom.pmf(ws, d, q).sum() for d, ws in rejects.items() if ws)

    mde = mde_binary(n, p_d)
    assert mde is not None
    assert power(mde) == pytest.approx(binary_power(n, p_d, mde), abs=1e-9) and power(mde) >= 0.8 - 1e-6
    assert power(mde - 1e-4) < 0.8


@pytest.mark.parametrize("seed", range(40))
def test_judge_precision_and_recall_match_scikit_learn(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(seed)
    n = rng.randint(1, 80)
    people = [rng.choice(VERDICTS) for _ in range(n)]
    copy = rng.random()  # the judge copies people with some probability, else says anything (unverified too)
    judge = [p if rng.random() < copy else rng.choice((*VERDICTS, "unverified")) for p in people]
    ours = per_category(people, judge, VERDICTS)
    precision, recall, _, _ = metrics.precision_recall_fscore_support(people, judge, labels=list(VERDICTS),
                                                                      zero_division=np.nan)
    for score, p, r in zip(ours, precision, recall):
        assert (math.nan if score.precision is None else score.precision) == pytest.approx(p, nan_ok=True)
        assert (math.nan if score.recall is None else score.recall) == pytest.approx(r, nan_ok=True)


@pytest.mark.parametrize("k, n", [(0, 1), (1, 1), (3, 7), (27, 30), (0, 40), (40, 40), (13, 200)])
def test_wilson_interval_matches_scipy(k, n):
    stats = pytest.importorskip("scipy.stats")
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)
