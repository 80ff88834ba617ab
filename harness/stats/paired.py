"""Paired statistics of per-case values: pure numbers in, numbers out (no rows, runs or files).

The per-case differences are d = b - a; D counts the cases that differ (d_i != 0). The exact tables of the test
are in `harness/stats/signs.py`.

- p-value: paired randomisation (sign-flip) test, two-sided: under "no difference" each d_i is as likely to be
  -d_i, and p = P(|sum(s * d)| >= |sum(d)|) over sign vectors s. A tie (d_i = 0) is the same under every flip,
  so only the D differing cases count. `p_method` says how p was computed:
  - `exact-binomial` when every differing case differs by the same amount (0/1 metrics: d_i in {-1, 0, 1}), at
    any D: the two-sided binomial test of the W cases B wins among the D, p = P(|2X - D| >= |2W - D|),
    X ~ Binomial(D, 1/2) (McNemar's exact test);
  - `exact` when D <= 16: every one of the 2**D sign vectors of the differing cases is enumerated;
  - `monte-carlo` otherwise: p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + resamples) over random sign
    vectors s of all n cases. Its floor is 1 / (1 + resamples): no draw was as extreme (`at_floor`).
- Interval of the mean difference, 95 %: a score interval (`harness/stats/score_interval.py`), computed, never
  drawn. `ci_method` is `Tango score` when every differing case differs by 1 (0/1 metrics: Tango's interval for
  the difference of paired proportions) and `scaled score` otherwise (the same interval with wins and losses
  counted in units of the differing cases' size). The number of differing cases is estimated, not held fixed, so
  the far end can pass the observed delta (8 of 195 cases all better: [+0.021, +0.079]). At 0 the interval's test
  is the normal approximation of the sign-flip test, while p is exact (or Monte-Carlo): near 0.05 the two can
  disagree, and `disagreement` says so in words (6 better, 16 worse of 195: p 0.0525, interval
  [-0.103, -0.004]).
  Up to issue 41 the interval was the inverted exact sign-flip test when D <= 16 (the differing cases keeping
  their sizes; it could never pass the observed mean absolute difference and covered 0.16 of the time when 8 %
  of 195 cases all went one way) and the percentile bootstrap above.
- Holm's step-down adjustment of several p-values (`holm`).

A p below `P_FLOOR` (1e-300; an exact p of 1,365 of 1,365 cases one way is 2**-1364, which a float cannot hold)
is reported as `P_FLOOR`, never 0; views print it `< 1e-300`.

One generator seeded with `seed` draws the sign vectors (only for `monte-carlo`), per case while n x resamples is
at most 20 million, from the counts of the distinct differences above (`harness/stats/draws.py`): the same
distributions in time that does not grow with n x resamples. `mean_interval` (a percentile bootstrap of one
list of values) draws with a generator of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .defaults import DEFAULT_RESAMPLES, DEFAULT_SEED
from .draws import bootstrap_means, extreme_sign_flips
from .score_interval import paired_score_interval
from .signs import SignTable, sign_table

__all__ = ["EXACT", "EXACT_BINOMIAL", "MONTE_CARLO", "P_FLOOR", "SCALED_SCORE", "TANGO", "Paired", "at_floor",
           "differing", "disagreement", "holm", "mean_interval", "p_floored", "paired_stats", "sign_flip_p"]

EXACT_BINOMIAL, EXACT, MONTE_CARLO = "exact-binomial", "exact", "monte-carlo"
TANGO, SCALED_SCORE = "Tango score", "scaled score"
P_FLOOR = 1e-300  # the smallest p reported: below it a float p underflows to 0
_ALPHA = 0.05
_EPS = 1e-12


@dataclass(frozen=True)
class Paired:
    """The paired comparison of per-case values (module docstring); the figures are None when there are no
    cases. `differing` is D, the cases whose values differ."""

    mean_a: float | None
    mean_b: float | None
    delta: float | None  # mean_b - mean_a
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_method: str | None  # exact-binomial, exact or monte-carlo
    ci_method: str | None  # Tango score (0/1 differences) or scaled score
    differing: int = 0
    resamples: int = DEFAULT_RESAMPLES

    @property
    def at_floor(self) -> bool:
        return at_floor(self.p_value, self.p_method, self.resamples)


def at_floor(p_value: float | None, p_method: str | None, resamples: int) -> bool:
    """A Monte-Carlo p at its floor 1 / (1 + resamples): no random sign vector was as extreme, so the p is below
    about 1 / resamples, not 0."""
    return p_method == MONTE_CARLO and p_value is not None and p_value <= (1 + 1e-9) / (1 + resamples)


def differing(d: np.ndarray) -> np.ndarray:
    """The differences of the cases that differ (|d_i| > 1e-12)."""
    return d[np.abs(d) > _EPS]


def paired_stats(a: np.ndarray, b: np.ndarray, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                 ) -> Paired:
    """Means, delta, its interval and the sign-flip p for paired per-case values (module docstring)."""
    n = len(a)
    if n == 0:
        return Paired(None, None, None, None, None, None, None, None, 0, resamples)
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    nonzero = differing(d)
    table = sign_table(np.abs(nonzero))
    low, high = paired_score_interval(d)
    ci_method = TANGO if bool(np.all(np.abs(np.abs(nonzero) - 1.0) <= _EPS)) else SCALED_SCORE
    p, p_method = _p(d, nonzero, table, np.random.default_rng(seed), resamples)
    return Paired(float(np.mean(a)), float(np.mean(b)), float(d.mean()), low, high, p, p_method, ci_method,
                  len(nonzero), resamples)


def sign_flip_p(a: np.ndarray, b: np.ndarray, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                ) -> tuple[float, str]:
    """The two-sided sign-flip p of paired values alone and how it was computed (the p `paired_stats` gives)."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    nonzero = differing(d)
    return _p(d, nonzero, sign_table(np.abs(nonzero)), np.random.default_rng(seed), resamples)


def _p(d: np.ndarray, nonzero: np.ndarray, table: SignTable | None, rng: np.random.Generator,
       resamples: int) -> tuple[float, str]:
    if table is not None:
        return p_floored(table.null_p(float(nonzero.sum()))), EXACT_BINOMIAL if table.equal else EXACT
    return (1 + extreme_sign_flips(d, rng, resamples)) / (1 + resamples), MONTE_CARLO


def p_floored(p: float) -> float:
    """p, or `P_FLOOR` when it is smaller (an exact p that underflowed to 0 included)."""
    return max(p, P_FLOOR)


def disagreement(ci_low: float | None, ci_high: float | None, p_value: float | None, *, alpha: float = _ALPHA
                 ) -> str | None:
    """Where the interval and p tell different stories at `alpha`: the interval excludes 0 while p > alpha, or
    includes it while p <= alpha (module docstring); None when they agree or a figure is missing."""
    if ci_low is None or ci_high is None or p_value is None:
        return None
    excludes = ci_low > 0 or ci_high < 0
    if excludes and p_value > alpha:
        return (f"the interval excludes 0 but p > {alpha:g}: the interval's test is the normal approximation of the "
                "sign-flip test, p the test itself; read it as not yet shown and add cases")
    if not excludes and p_value <= alpha:
        return (f"p <= {alpha:g} but the interval includes 0: the interval's test is the normal approximation of "
                "the sign-flip test, p the test itself; the difference is significant, its size is uncertain")
    return None


def mean_interval(values: Sequence[float] | np.ndarray, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                  ) -> tuple[float, float] | None:
    """The 95 % percentile bootstrap interval of the mean of `values` (the draws `paired_stats` makes for a
    difference); None when there are none."""
    if not len(values):
        return None
    low, high = np.percentile(bootstrap_means(np.asarray(values, dtype=float), np.random.default_rng(seed),
                                              resamples), [2.5, 97.5])
    return float(low), float(high)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the input order; None entries are skipped and not counted.

    With the m given p-values sorted ascending p(1) <= ... <= p(m), the adjusted p(i) is
    max over j <= i of min(1, (m - j + 1) * p(j)). Rejecting every hypothesis whose adjusted p is <= alpha keeps
    the chance of any false rejection at most alpha, whatever the dependence between the tests
    (Holm 1979, "A simple sequentially rejective multiple test procedure"). Ties keep their input order."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
