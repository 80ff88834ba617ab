"""Tango's score interval (`harness/stats/score_interval.py`) and kappa's analytic interval
(`harness/stats/kappa_interval.py`) on tables worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats.kappa_interval import kappa_interval
from harness.stats.score_interval import Z_95, paired_score_interval, tango_interval, tango_z

Z2 = Z_95 ** 2


@pytest.mark.parametrize("n", [1, 4, 195, 5000])
def test_no_differing_case_gives_plus_minus_z2_over_n_plus_z2(n):
    # W = L = 0: above 0 the restricted loss probability is 0, Z = -sqrt(n delta / (1 - delta)), so each end solves
    # n delta / (1 - delta) = z**2: delta = z**2 / (n + z**2).
    assert tango_interval(0, 0, n) == pytest.approx((-Z2 / (n + Z2), Z2 / (n + Z2)), abs=1e-12)


@pytest.mark.parametrize("n", [5, 30, 195])
def test_every_case_better_reaches_1_and_its_low_end_has_a_closed_form(n):
    # W = n: no ties, the restricted loss probability is (1 - delta) / 2, the variance n (1 - delta**2), so
    # Z = sqrt(n (1 - delta) / (1 + delta)) and the low end is (n - z**2) / (n + z**2).
    assert tango_interval(n, 0, n) == pytest.approx(((n - Z2) / (n + Z2), 1.0), abs=1e-12)


def test_at_zero_the_statistic_is_mcnemars_and_the_interval_is_antisymmetric():
    assert tango_z(16, 6, 195, 0.0) == pytest.approx(10 / np.sqrt(22))
    low, high = tango_interval(16, 6, 195)
    assert tango_interval(6, 16, 195) == pytest.approx((-high, -low), abs=1e-12)
    assert tango_z(16, 6, 195, high) == pytest.approx(-Z_95, abs=1e-9)  # an end is where |Z| = z


def test_the_scaled_interval_of_differences_of_one_size_is_tangos_times_that_size():
    d = np.r_[np.full(8, 0.5), np.full(3, -0.5), np.zeros(189)]
    low, high = tango_interval(8, 3, 200)
    assert paired_score_interval(d) == pytest.approx((0.5 * low, 0.5 * high), abs=1e-12)
    assert paired_score_interval(d * 2) == pytest.approx((low, high), abs=1e-12)


def test_kappa_08_over_60_has_the_fleiss_cohen_everitt_interval():
    # 30 S / 30 U, 27 of each agreed: p_ii 0.45, margins 0.5, kappa 0.8; A = 0.9 * 0.8**2 = 0.576,
    # B = 0.2**2 * 0.1 * 1 = 0.004, C = (0.8 - 0.1)**2 = 0.49: var = 0.09 / (60 * 0.25) = 0.006, se 0.0775.
    human = ["S"] * 30 + ["U"] * 30
    judge = ["S"] * 27 + ["U"] * 3 + ["U"] * 27 + ["S"] * 3
    se = np.sqrt(0.006)
    assert kappa_interval(human, judge) == pytest.approx((0.8, 0.8 - Z_95 * se, 0.8 + Z_95 * se))


def test_kappas_interval_collapses_at_perfect_agreement_and_is_undefined_for_a_one_verdict_rater():
    assert kappa_interval(["S"] * 40 + ["U"] * 20, ["S"] * 40 + ["U"] * 20) == (1.0, 1.0, 1.0)
    assert kappa_interval(["S"] * 20 + ["U"] * 20, ["unverified"] * 40) == (0.0, None, None)
    assert kappa_interval(["S"] * 5, ["S"] * 5) is None and kappa_interval([], []) is None
