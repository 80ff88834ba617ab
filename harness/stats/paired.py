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
- Interval of the mean difference, 95 %; `ci_method` says which:
  - `inverted sign-flip` when D <= 16: the deltas the exact test does not reject under the sign model
    (`harness/stats/signs.py`: the differing cases keep their sizes, each goes B's way with probability q). It
    excludes 0 exactly when p <= 0.05, and never reaches past the mean absolute difference;
  - `bootstrap` otherwise: resample the n per-case differences with replacement, `resamples` times, take the
    mean of each resample, and report the 2.5th and 97.5th percentiles (percentile method). `mean_interval`
    does the same for one list of values.
  With few differing cases the percentile bootstrap is too narrow: with D = 5 all one way it excludes 0 while no
  test at 0.05 can (p = 2 / 32), and at D = 4, 8, 11 and 14 it excludes 0 for 12.5 %, 7.0 %, 6.5 % and 5.7 % of
  the null's outcomes instead of at most 5 % (n = 200, 10,000 resamples). From 17 to 60 (the largest checked) the
  excess stays within 1.4 points; it can still disagree with p near 0.05 there, and compare says so when it does.
- Holm's step-down adjustment of several p-values (`holm`).

One generator seeded with `seed` draws the bootstrap resamples (only for `bootstrap`), then the sign vectors
(only for `monte-carlo`), so a method that did not change gives the same digits as before. The draws are made per
case while n x resamples is at most 20 million, from the counts of the distinct differences above
(`harness/stats/draws.py`): the same distributions in time that does not grow with n x resamples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .defaults import DEFAULT_RESAMPLES, DEFAULT_SEED
from .draws import bootstrap_means, extreme_sign_flips
from .signs import MAX_ENUMERATED, SignTable, inverted_interval, sign_table

__all__ = ["BOOTSTRAP", "EXACT", "EXACT_BINOMIAL", "INVERTED", "MONTE_CARLO", "Paired", "at_floor", "differing",
           "holm", "mean_interval", "paired_stats", "sign_flip_p"]

EXACT_BINOMIAL, EXACT, MONTE_CARLO = "exact-binomial", "exact", "monte-carlo"
INVERTED, BOOTSTRAP = "inverted sign-flip", "bootstrap"
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
    ci_method: str | None  # inverted sign-flip or bootstrap
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
    rng = np.random.default_rng(seed)
    if table is not None and len(nonzero) <= MAX_ENUMERATED:
        low, high, ci_method = *inverted_interval(table, float(nonzero.sum()), n), INVERTED
    else:
        low, high = (float(x) for x in np.percentile(bootstrap_means(d, rng, resamples), [2.5, 97.5]))
        ci_method = BOOTSTRAP
    p, p_method = _p(d, nonzero, table, rng, resamples)
    return Paired(float(np.mean(a)), float(np.mean(b)), float(d.mean()), low, high, p, p_method, ci_method,
                  len(nonzero), resamples)


def sign_flip_p(a: np.ndarray, b: np.ndarray, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                ) -> tuple[float, str]:
    """The two-sided sign-flip p of paired values alone and how it was computed (no interval drawn: with
    `monte-carlo` the sign vectors are the first draws of the generator, not those `paired_stats` makes after its
    bootstrap)."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    nonzero = differing(d)
    return _p(d, nonzero, sign_table(np.abs(nonzero)), np.random.default_rng(seed), resamples)


def _p(d: np.ndarray, nonzero: np.ndarray, table: SignTable | None, rng: np.random.Generator,
       resamples: int) -> tuple[float, str]:
    if table is not None:
        return table.null_p(float(nonzero.sum())), EXACT_BINOMIAL if table.equal else EXACT
    return (1 + extreme_sign_flips(d, rng, resamples)) / (1 + resamples), MONTE_CARLO


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
