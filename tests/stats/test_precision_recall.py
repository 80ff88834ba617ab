"""`harness.stats.precision_recall`: a judge's precision and recall per verdict against people, with Wilson
intervals, on tables worked out by hand."""

from __future__ import annotations

import math

import pytest

from harness.stats.precision_recall import per_category, wilson_interval

S, U, C, V = "supported", "unsupported", "contradicted", "unverified"


def test_per_verdict_on_a_hand_made_table():
    # people: S S S S U U C; judge: S S U V U S C
    people = [S, S, S, S, U, U, C]
    judge = [S, S, U, V, U, S, C]
    supported, unsupported, contradicted = per_category(people, judge, (S, U, C))
    # supported: the judge said S 3 times, 2 of them people's S; people said S 4 times (one judged V, one U)
    assert (supported.hits, supported.judged, supported.reference) == (2, 3, 4)
    assert (supported.precision, supported.recall) == (2 / 3, 0.5)
    assert (unsupported.precision, unsupported.recall) == (0.5, 0.5)
    assert (contradicted.precision, contradicted.recall) == (1.0, 1.0)
    none = per_category([S, S], [S, U], (C,))[0]
    assert (none.precision, none.recall, none.precision_interval, none.precision_text()) == (None, None, None,
                                                                                            "n/a (0/0)")


def _wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    # Wilson (1927): the p with |p_hat - p| = z sqrt(p (1 - p) / n), solved as a quadratic in p
    z, p = 1.959963984540054, k / n
    a, b, c = 1 + z * z / n, -(2 * p + z * z / n), p * p
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


@pytest.mark.parametrize("k, n", [(27, 30), (0, 12), (10, 10), (1, 2), (45, 60)])
def test_wilson_interval_is_the_quadratic_solution(k, n):
    low, high = wilson_interval(k, n)
    assert (low, high) == pytest.approx(_wilson_by_hand(k, n), abs=1e-12)
    assert low <= k / n <= high


def test_wilson_does_not_collapse_at_the_ends():
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)  # 10 / (10 + z**2)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(3, 0) is None
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        wilson_interval(4, 3)
