"""Paired statistics of per-case values: pure numbers in, numbers out (no rows, runs or files).

- Bootstrap interval of a mean difference: resample the n per-case differences d = b - a with replacement,
  `resamples` times, take the mean of each resample, and report the 2.5th and 97.5th percentiles (percentile
  method). `mean_interval` does the same for one list of values.
- p-value: paired randomisation (sign-flip) test, two-sided. Under "no difference" each d_i is as likely to be
  -d_i, so p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + resamples) over random sign vectors s. When
  2**n <= resamples (and n <= 16) every sign vector is enumerated instead and p is exact: #{...} / 2**n
  (`exact_sign_flip` says which).
- Holm's step-down adjustment of several p-values (`holm`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from .defaults import DEFAULT_RESAMPLES, DEFAULT_SEED

__all__ = ["exact_sign_flip", "holm", "mean_interval", "paired_stats"]

_EPS = 1e-12
_EXACT_MAX_CASES = 16  # 2**16 sign vectors at most
_BLOCK_CELLS = 2_000_000  # resamples x cases per numpy block: bounds memory without a loop per resample


def exact_sign_flip(n: int, resamples: int) -> bool:
    """Whether the sign-flip p of n paired cases is exact (every sign vector enumerated) or Monte-Carlo."""
    return n <= _EXACT_MAX_CASES and 2 ** n <= resamples


def paired_stats(a: np.ndarray, b: np.ndarray, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                 ) -> tuple[float | None, float | None, float | None, float | None, float | None, float | None]:
    """(mean_a, mean_b, delta, ci_low, ci_high, p_value) for paired per-case values; all None when empty.
    One generator seeded with `seed` draws the bootstrap indices, then the sign vectors."""
    n = len(a)
    if n == 0:
        return None, None, None, None, None, None
    d = b - a
    rng = np.random.default_rng(seed)
    means = _bootstrap_means(d, rng, resamples)
    low, high = np.percentile(means, [2.5, 97.5])
    return (float(a.mean()), float(b.mean()), float(d.mean()), float(low), float(high),
            _sign_flip_p(d, rng, resamples))


def mean_interval(values: Sequence[float] | np.ndarray, *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES
                  ) -> tuple[float, float] | None:
    """The 95 % percentile bootstrap interval of the mean of `values` (the draws `paired_stats` makes for a
    difference); None when there are none."""
    if not len(values):
        return None
    low, high = np.percentile(_bootstrap_means(np.asarray(values, dtype=float), np.random.default_rng(seed),
                                               resamples), [2.5, 97.5])
    return float(low), float(high)


def _bootstrap_means(d: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of d, drawn in blocks of whole resamples (vectorised)."""
    n = len(d)
    block = max(1, _BLOCK_CELLS // n)
    parts = []
    for start in range(0, resamples, block):
        idx = rng.integers(0, n, size=(min(block, resamples - start), n))
        parts.append(d[idx].mean(axis=1))
    return np.concatenate(parts)


def _sign_flip_p(d: np.ndarray, rng: np.random.Generator, resamples: int) -> float:
    n = len(d)
    observed = abs(d.mean())
    if exact_sign_flip(n, resamples):  # small n: enumerate every sign vector, exact p
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        return float(np.mean(np.abs(signs @ d / n) >= observed - _EPS))
    extreme = 0
    block = max(1, _BLOCK_CELLS // n)
    for start in range(0, resamples, block):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(min(block, resamples - start), n))
        extreme += int(np.sum(np.abs(signs @ d / n) >= observed - _EPS))
    return (1 + extreme) / (1 + resamples)


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
