"""The random draws behind compare's Monte-Carlo sign-flip p and the bootstrap interval of a mean (`mean_interval`:
a sweep cell's own mean), in time and memory that do not grow with cases x resamples. (Compare's interval of the
difference is computed, not drawn: `harness/stats/score_interval.py`.)

For n per-case differences d (D of them nonzero) and R resamples, each draw is made one of two ways, equal in
distribution:

- per case: a bootstrap resample is n indices drawn uniformly with replacement, its mean that of the d they pick;
  a sign vector is n random signs, its statistic |mean(s * d)|. n x R draws in blocks of ~2 million cells.
- from counts: d takes K distinct values v_k, c_k times each (0 among them: the ties). A resample holds v_k
  Multinomial(n, c / n)_k times, so its mean is sum_k counts_k v_k / n: R x K draws. Under a sign flip the c_k
  cases of size |v_k| contribute |v_k| (2 B_k - c_k), B_k ~ Binomial(c_k, 1/2) the number of + signs among them,
  independently; a tie flips nothing. When the distinct values are many (8 K > D), the nonzero cases are drawn
  one by one instead: a resample's draws that land on them number Binomial(n, D / n), each uniform among the D,
  and a sign vector is D signs; R x D draws, ties left out.

Per case while n x R is at most `PER_CASE_CELLS` (n <= 2,000 at the default 10,000 resamples), so a comparison
that was cheap before issue 31 keeps its seeded digits; from counts above, where the per-case draws cost n x R
(10^9 at 100k cases) and the digits necessarily differ (the same distribution, other random numbers).
"""

from __future__ import annotations

import numpy as np

__all__ = ["PER_CASE_CELLS", "bootstrap_means", "extreme_sign_flips", "null_sums"]

PER_CASE_CELLS = 20_000_000  # n x resamples up to which the draws are made per case (the digits before issue 31)
_BLOCK_CELLS = 2_000_000  # draws per numpy block: bounds memory without a loop per resample
_EPS = 1e-12
_FEW = 8  # counts when 8 x the distinct values <= the nonzero cases


def bootstrap_means(d: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of the per-case differences d (module docstring)."""
    n = len(d)
    if n * resamples <= PER_CASE_CELLS:
        return _per_case_means(d, rng, resamples)
    values, counts = np.unique(d, return_counts=True)
    nonzero = d[np.abs(d) > _EPS]
    if _FEW * len(values) <= max(len(nonzero), 1):
        return _counted_means(values, counts, rng, resamples)
    return _nonzero_means(nonzero, n, rng, resamples)


def extreme_sign_flips(d: np.ndarray, rng: np.random.Generator, resamples: int) -> int:
    """How many of `resamples` random sign vectors s give |mean(s * d)| >= |mean(d)| (module docstring)."""
    n = len(d)
    observed = abs(d.mean())
    if n * resamples <= PER_CASE_CELLS:
        return _per_case_extreme(d, observed, rng, resamples)
    sums = null_sums(np.abs(d[np.abs(d) > _EPS]), rng, resamples)
    return int(np.sum(np.abs(sums / n) >= observed - _EPS))


def null_sums(sizes: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    """T = sum_i s_i m_i for `draws` random sign vectors s over the sizes m_i > 0 of the differing cases: from
    the number of + signs per distinct size, or sign by sign when the sizes are many (module docstring)."""
    values, counts = np.unique(sizes, return_counts=True)
    if _FEW * len(values) <= max(len(sizes), 1):
        return _counted_sums(values, counts, rng, draws)
    return _signed_sums(sizes, rng, draws)


def _blocks(total: int, width: int) -> list[tuple[int, int]]:
    step = max(1, _BLOCK_CELLS // max(width, 1))
    return [(start, min(step, total - start)) for start in range(0, total, step)]


def _per_case_means(d: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    n = len(d)
    parts = [d[rng.integers(0, n, size=(size, n))].mean(axis=1) for _, size in _blocks(resamples, n)]
    return np.concatenate(parts)


def _per_case_extreme(d: np.ndarray, observed: float, rng: np.random.Generator, resamples: int) -> int:
    n, extreme = len(d), 0
    for _, size in _blocks(resamples, n):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
        extreme += int(np.sum(np.abs(signs @ d / n) >= observed - _EPS))
    return extreme


def _counted_means(values: np.ndarray, counts: np.ndarray, rng: np.random.Generator, resamples: int
                   ) -> np.ndarray:
    """Resample means from Multinomial(n, c / n) counts of the distinct values."""
    n = int(counts.sum())
    shares = counts / n
    parts = [rng.multinomial(n, shares, size=size) @ values / n for _, size in _blocks(resamples, len(values))]
    return np.concatenate(parts)


def _nonzero_means(nonzero: np.ndarray, n: int, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Resample means drawing only the nonzero cases: Binomial(n, D / n) of the n draws land on them, uniformly."""
    count = len(nonzero)
    landed = rng.binomial(n, count / n, size=resamples)
    sums = np.empty(resamples)
    start = 0
    while start < resamples:  # blocks of whole resamples, about _BLOCK_CELLS draws each
        stop = start + max(1, int(np.searchsorted(np.cumsum(landed[start:]), _BLOCK_CELLS, side="right")))
        owner = np.repeat(np.arange(stop - start), landed[start:stop])
        picked = nonzero[rng.integers(0, count, size=len(owner))]
        sums[start:stop] = np.bincount(owner, weights=picked, minlength=stop - start)
        start = stop
    return sums / n


def _counted_sums(sizes: np.ndarray, counts: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """sum_i s_i |d_i| under random signs, from the number of + signs among the cases of each distinct size."""
    parts = []
    for _, size in _blocks(resamples, len(sizes)):
        plus = rng.binomial(counts, 0.5, size=(size, len(sizes)))
        parts.append((2 * plus - counts) @ sizes)
    return np.concatenate(parts)


def _signed_sums(sizes: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """sum_i s_i |d_i| under random signs of the nonzero cases, drawn one by one."""
    parts = [np.where(rng.random((size, len(sizes))) < 0.5, 1.0, -1.0) @ sizes
             for _, size in _blocks(resamples, len(sizes))]
    return np.concatenate(parts)
