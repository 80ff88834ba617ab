"""Cross-check tier (`python -m pytest -m crosscheck`): how often compare's 95 % interval holds the true difference,
by seeded simulation of the scenarios of issue 41, where the interval of before (the inverted sign-flip test, which
held the number of differing cases fixed) covered 0.83 (80 % of the changes one way), 0.65 (95 %) and 0.16 (all one
way, 8 % of 195 cases differing); and what power the minimum detectable difference has when the cases themselves
are drawn again, under both of its models.

Each case set is drawn from a stated population: every case differs with probability p_d, a differing case goes
B's way with probability `share`, and (rr-like) its size is that of two different reciprocal ranks from
{1, 1/2, 1/3, 1/4, 1/5, 0}, uniformly; the true difference is p_d (2 share - 1) E|size|. Figures measured at this
commit are in each test's comment; the bounds are 0.93 where the method promises 0.95 (issue 41), 0.90 for the
rr-like scenario of 100 seeded case sets."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats.mde import minimum_detectable_difference
from harness.stats.paired import paired_stats, sign_flip_p
from harness.stats.score_interval import paired_score_interval

pytestmark = pytest.mark.crosscheck
RANKS = np.array([1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 0.0])
RR_SIZES = np.array([abs(x - y) for x in RANKS for y in RANKS if x != y])


def _binary_pair(rng: np.random.Generator, n: int, p_d: float, share: float) -> tuple[np.ndarray, np.ndarray]:
    wins, losses, _ = rng.multinomial(n, [p_d * share, p_d * (1 - share), 1 - p_d])
    a = np.r_[np.zeros(wins), np.ones(losses), np.zeros(n - wins - losses)]
    b = np.r_[np.ones(wins), np.zeros(losses), np.zeros(n - wins - losses)]
    return a, b


def _rr_differences(rng: np.random.Generator, n: int, p_d: float, share: float, sizes: np.ndarray = RR_SIZES
                    ) -> np.ndarray:
    differ = rng.random(n) < p_d
    k = int(differ.sum())
    d = np.zeros(n)
    d[differ] = rng.choice(sizes, k) * np.where(rng.random(k) < share, 1.0, -1.0)
    return d


def _covers(low: float, high: float, delta: float) -> bool:
    return low - 1e-12 <= delta <= high + 1e-12


@pytest.mark.parametrize("n, p_d, share, least", [
    (195, 0.08, 1.0, 0.93),  # all one way; measured 0.964 (the inverted interval of before: 0.16)
    (195, 0.08, 0.95, 0.93),  # measured 0.957 (before: 0.65)
    (195, 0.08, 0.8, 0.93),  # measured 0.942 (before: 0.83)
    (195, 0.08, 0.5, 0.93),  # no difference: measured 0.946
    (195, 0.2, 0.85, 0.93),  # measured 0.952
])
def test_a_01_metric_interval_covers_the_true_difference(n, p_d, share, least):
    rng = np.random.default_rng(41)
    delta = p_d * (2 * share - 1)
    covered = 0
    for _ in range(1000):
        a, b = _binary_pair(rng, n, p_d, share)
        s = paired_stats(a, b, resamples=1)  # the p is exact and not looked at; one resample keeps it cheap
        covered += _covers(s.ci_low, s.ci_high, delta)
    assert covered / 1000 >= least


@pytest.mark.parametrize("n, p_d, share, sets, seed, least", [
    (100, 0.1, 0.85, 100, 7, 0.90),  # issue 41's rr-like scenario, 100 seeded case sets: measured 0.93 (before 0.78)
    (100, 0.1, 0.85, 1000, 41, 0.93),  # the same over 1,000: measured 0.941
    (100, 0.1, 1.0, 1000, 41, 0.93),  # all one way: measured 0.942
    (100, 0.1, 0.5, 1000, 41, 0.93),  # no difference: measured 0.959
    (195, 0.08, 1.0, 1000, 41, 0.93),  # all one way, 195 cases: measured 0.931, the lowest seen
])
def test_an_rr_like_metric_interval_covers_the_true_difference(n, p_d, share, sets, seed, least):
    rng = np.random.default_rng(seed)
    delta = p_d * (2 * share - 1) * RR_SIZES.mean()
    covered = 0
    for _ in range(sets):
        low, high = paired_score_interval(_rr_differences(rng, n, p_d, share))
        covered += _covers(low, high, delta)
    assert covered / sets >= least


def test_the_simulated_interval_is_the_one_compare_prints():
    rng = np.random.default_rng(3)
    for _ in range(20):
        d = _rr_differences(rng, 100, 0.3, 0.7)
        s = paired_stats(np.zeros(100), d, resamples=1)
        assert (s.ci_low, s.ci_high) == paired_score_interval(d)


def _power_over_new_cases(n: int, p_d: float, sizes: np.ndarray, mde: float, sets: int, seed: int) -> float:
    """The share of new case sets, drawn from the population the MDE describes (each case differs with probability
    p_d, by a size drawn from `sizes`, B's way with the q that makes the true difference `mde`), on which compare's
    own p (`sign_flip_p`) is at most 0.05."""
    rng = np.random.default_rng(seed)
    share = (1 + mde / (p_d * sizes.mean())) / 2
    rejected = 0
    for _ in range(sets):
        d = _rr_differences(rng, n, p_d, share, sizes)
        rejected += sign_flip_p(np.zeros(n), d, resamples=2000)[0] <= 0.05
    return rejected / sets


def test_the_binary_mde_has_its_power_over_new_cases_and_the_continuous_one_less_when_few_differ():
    # Both MDE models, against new case sets drawn from the population each describes (docs/compare-and-report.md):
    # - 0/1 (40 cases, 8 differing): the model already lets the number of differing cases vary, so the power over
    #   new cases is the promised 0.80 (measured 0.8005 over 2,000 sets, MDE 0.195);
    # - rr-like sizes (40 cases, 8 differing): the model holds the 8 cases and their sizes fixed, so over new case
    #   sets the power is lower (measured 0.691 over 1,000 sets, MDE 0.072; 40 differing of 195: 0.767 over 300),
    #   as the docs and the table's MDE note say.
    n, differing = 40, 8
    binary = minimum_detectable_difference([0.0] * n, [1.0] * differing + [0.0] * (n - differing))
    assert binary.status == "ok"
    power = _power_over_new_cases(n, differing / n, np.ones(1), binary.mde, 2000, 11)
    assert power == pytest.approx(0.80, abs=0.03)
    sizes = np.random.default_rng(5).choice(RR_SIZES, differing)
    continuous = minimum_detectable_difference([0.0] * n, [*sizes, *[0.0] * (n - differing)])
    assert continuous.status == "ok"
    power = _power_over_new_cases(n, differing / n, sizes, continuous.mde, 1000, 12)
    assert 0.6 <= power < 0.78
