"""What compare's sign-flip test sees of two runs: the exact distribution of its statistic, when it is cheap.

Compare tests the per-case differences d_i = b_i - a_i of n paired cases by flipping their signs
(`harness/stats/paired.py`). A tie (d_i = 0) is the same under every flip and contributes nothing: only the D
differing cases count, through their sizes m_i = |d_i| and the statistic T = sum_i s_i m_i.

- Null ("no difference"): each differing case's sign is + or - with probability 1/2, independently, and
  p = P(|T| >= |T_observed|), two-sided. The smallest p D differing cases can give is 2 / 2**D (every case one way).
- Exact tables (`SignTable`): when every size is equal (0/1 metrics: every m_i is 1), T = m (2W - D) with W the
  number of + signs, W ~ Binomial(D, 1/2) under the null: the exact two-sided binomial (McNemar) test, at any D.
  Otherwise, for D <= MAX_ENUMERATED, every one of the 2**D sign vectors is enumerated. Beyond that compare draws
  random sign vectors.
- The sign model, the alternative under which the power is computed (for the minimum detectable difference of
  metrics that are not 0/1, `harness/stats/mde.py`): the ties stay ties, the differing cases keep their observed sizes,
  and each goes B's way with probability q, independently. The true mean difference is then delta = (2q - 1) * mad,
  where mad = sum_i m_i / n is the mean absolute difference over all n cases: the largest difference these cases
  allow (every differing case going B's way). For 0/1 values q is the share of discordant cases B wins.
- Power (`SignTable.power`): P_q(the test at level alpha rejects), exact from the table; beyond it, simulated with
  a fixed seed (`SimulatedPower`): the critical value from random null sign vectors, as compare's Monte-Carlo
  test draws them, then for each number K of cases going B's way the share of random K-subsets that reach it,
  weighted by the binomial probability of K.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .draws import PER_CASE_CELLS, null_sums

__all__ = ["MAX_ENUMERATED", "SIMULATED_DRAWS", "SignTable", "SimulatedPower", "sign_table", "smallest_p"]

MAX_ENUMERATED = 16  # 2**16 sign vectors at most are enumerated
_REL_TOL = 1e-9  # two values of T closer than this share of sum(m) are the same value (float sums)
SIMULATED_DRAWS = 4000  # random orders of the differing cases for a simulated power
_NULL_DRAWS = 10_000  # sign vectors drawn under the null for the simulated critical value (compare's default)
_BLOCK_CELLS = 2_000_000  # draws x cases per numpy block: bounds memory
_FEW = 8  # few distinct sizes: at most one per 8 differing cases
_HOEFFDING_LOG = 70.0  # the simulated power leaves out outcomes rarer than e**-70 (`_window_hits`)


def smallest_p(differing: int) -> float:
    """The smallest two-sided sign-flip p that `differing` cases can give: every one of them the same way."""
    return 1.0 if differing == 0 else min(1.0, 2.0 ** (1 - differing))


@dataclass(frozen=True)
class SignTable:
    """Every value the statistic T takes over the sign vectors of D differing cases: per entry, the number of +
    signs `plus`, the value `t` and the log of how many sign vectors give it (`log_count`)."""

    sizes_total: float  # sum of the sizes m_i
    differing: int  # D
    plus: np.ndarray
    t: np.ndarray
    log_count: np.ndarray
    equal: bool  # every size is the same: the binomial table (exact at any D)

    def _weights(self, q: float) -> np.ndarray:
        """The probability of each entry when each sign is + with probability q."""
        d, k = self.differing, self.plus
        if q <= 0.0 or q >= 1.0:  # only the vectors with every sign + (or every sign -)
            every = k == (d if q >= 1.0 else 0)
            return np.where(every, np.exp(np.where(every, self.log_count, 0.0)), 0.0)
        return np.exp(self.log_count + k * math.log(q) + (d - k) * math.log1p(-q))

    def _tol(self) -> float:
        return _REL_TOL * max(self.sizes_total, 1e-300)

    def prob(self, q: float, mask: np.ndarray) -> float:
        """P_q(the entries in `mask`)."""
        return float(min(1.0, self._weights(q)[mask].sum()))

    def null_p(self, t_observed: float) -> float:
        """The two-sided sign-flip p: P(|T| >= |t_observed|) under the null."""
        return self.prob(0.5, np.abs(self.t) >= abs(t_observed) - self._tol())

    def rejected(self, alpha: float) -> np.ndarray:
        """Mask of the entries the two-sided test at level alpha rejects (their null p <= alpha)."""
        size = np.abs(self.t)
        order = np.argsort(-size, kind="stable")
        null = self._weights(0.5)[order]
        ordered = size[order]
        # entries whose |T| is equal (within tolerance) share one p: the null mass at or above that |T|
        starts = np.concatenate(([True], np.diff(ordered) < -self._tol()))
        group = np.cumsum(starts) - 1
        mass = np.cumsum(np.bincount(group, weights=null))
        mask = np.zeros(len(size), dtype=bool)
        mask[order] = mass[group] <= alpha * (1 + 1e-9)
        return mask

    def power(self, q: float, alpha: float) -> float:
        """P_q(the test at level alpha rejects)."""
        return self.prob(q, self.rejected(alpha))


def _log_comb(d: int) -> np.ndarray:
    logf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, d + 1)))))
    k = np.arange(d + 1)
    return logf[d] - logf[k] - logf[d - k]


def sign_table(sizes: Sequence[float] | np.ndarray) -> SignTable | None:
    """The exact table of T for these sizes of the differing cases (all > 0): binomial when they are equal (any
    number of them), every sign vector when they are at most MAX_ENUMERATED; None otherwise."""
    m = np.asarray(sizes, dtype=float)
    d, total = len(m), float(m.sum())
    if d and np.ptp(m) <= _REL_TOL * total:
        k = np.arange(d + 1)
        return SignTable(total, d, k, m.mean() * (2 * k - d), _log_comb(d), True)
    if d > MAX_ENUMERATED:
        return None
    signs = 1.0 - 2.0 * ((np.arange(2 ** d)[:, None] >> np.arange(d)) & 1)  # row i: the bits of i, 1 -> "-"
    return SignTable(total, d, (signs > 0).sum(axis=1), signs @ m, np.zeros(len(signs)), False)


class SimulatedPower:
    """The power of the sign-flip test beyond MAX_ENUMERATED differing cases of unequal sizes, by simulation with
    a fixed seed. The critical value comes from `_NULL_DRAWS` random null sign vectors (the Monte-Carlo test compare
    runs at its default resamples: reject when (1 + #{|T'| >= |T|}) / (1 + draws) <= alpha). Under the sign model
    the number K of cases going B's way is Binomial(D, q), and given K which cases they are is a uniformly random
    K-subset; so `draws` random orders of the cases give, for every K at once (the first K of each order), the share
    that reaches the critical value, and power(q) = sum_K P(K; D, q) * share(K), exact in q and smooth, so a
    bisection on it is stable."""

    def __init__(self, sizes: Sequence[float] | np.ndarray, alpha: float, *, seed: int, draws: int = SIMULATED_DRAWS):
        m = np.asarray(sizes, dtype=float)
        total, d = float(m.sum()), len(m)
        rng = np.random.default_rng(seed)
        # the draws of before issue 31 while they are cheap; above, the same distributions in O(D) per draw
        cheap = d * (_NULL_DRAWS + draws) <= PER_CASE_CELLS
        sums = np.concatenate(list(_null_sums(m, rng, _NULL_DRAWS))) if cheap else null_sums(m, rng, _NULL_DRAWS)
        null = np.sort(np.abs(sums))[::-1]  # largest first
        # reject |T| when at most j null draws reach it, j = alpha * (1 + draws) - 1: when |T| > null[j]
        j = math.floor(alpha * (1 + _NULL_DRAWS) * (1 + 1e-9)) - 1
        threshold = math.inf if j < 0 else -math.inf if j >= len(null) else float(null[j]) + _REL_TOL * total
        values, counts = np.unique(m, return_counts=True)
        if cheap or _FEW * len(values) > d:
            hits = _ordered_hits(m, threshold, rng, draws, sort=cheap)
        else:
            hits = _window_hits(values, counts, threshold, rng, draws)
        self.share, self.log_comb = hits / draws, _log_comb(d)

    def power(self, q: float) -> float:
        d = len(self.share) - 1
        k = np.arange(d + 1)
        if q <= 0.0 or q >= 1.0:
            return float(self.share[d if q >= 1.0 else 0])
        return float(np.exp(self.log_comb + k * math.log(q) + (d - k) * math.log1p(-q)) @ self.share)


def _ordered_hits(m: np.ndarray, threshold: float, rng: np.random.Generator, draws: int, *, sort: bool
                  ) -> np.ndarray:
    """For every K, how many of `draws` random orders of the cases reach the threshold with their first K going B's
    way. The orders come from sorted random keys (`sort`, the draws of before issue 31) or from shuffles (O(D))."""
    total, d = float(m.sum()), len(m)
    hits = np.zeros(d + 1)
    block = max(1, _BLOCK_CELLS // max(d, 1))
    for start in range(0, draws, block):
        size = min(block, draws - start)
        ordered = m[np.argsort(rng.random((size, d)), axis=1)] if sort else rng.permuted(np.tile(m, (size, 1)), axis=1)
        firsts = np.concatenate([np.zeros((size, 1)), np.cumsum(ordered, axis=1)], axis=1)
        hits += (np.abs(2 * firsts - total) > threshold).sum(axis=0)  # T with the first K going B's way
    return hits


def _window_hits(values: np.ndarray, counts: np.ndarray, threshold: float, rng: np.random.Generator, draws: int
                 ) -> np.ndarray:
    """`_ordered_hits` for sizes that take few distinct values, walking each random order only where its outcome is
    in doubt. The first K of a random order sum to S_K, of mean K * mean(m), and by Hoeffding's bound for sampling
    without replacement S_K strays from it by more than range(m) * sqrt(min(K, D - K) * 70 / 2) with probability
    below e**-70 (4e-31): every K whose band lies wholly below (total - threshold) / 2 or wholly above
    (total + threshold) / 2 reaches the threshold in every order, and only the K between are walked. There, an
    order is drawn as it falls: how many of each size come first (multivariate hypergeometric), then the sizes of
    the window in a random arrangement of a multivariate hypergeometric draw from the rest. The same distribution
    as whole shuffles, in O(window) per order (about 20 sqrt(D) for reciprocal-rank sizes) instead of O(D)."""
    d, total = int(counts.sum()), float(counts @ values)
    k = np.arange(d + 1)
    centre = k * total / d
    band = (values[-1] - values[0]) * np.sqrt(np.minimum(k, d - k) * _HOEFFDING_LOG / 2)
    settled = (centre + band < (total - threshold) / 2) | (centre - band > (total + threshold) / 2)
    hits = np.where(settled, float(draws), 0.0)
    open_ = np.nonzero(~settled)[0]
    if not open_.size:
        return hits
    first, last = int(open_[0]), int(open_[-1])
    sums = np.empty(last - first + 1)
    for _ in range(draws):
        before = rng.multivariate_hypergeometric(counts, first, method="marginals")
        inside = rng.multivariate_hypergeometric(counts - before, last - first, method="marginals")
        sums[0] = before @ values
        sums[1:] = values[rng.permutation(np.repeat(np.arange(len(values)), inside))]
        hits[first:last + 1] += np.abs(2 * np.cumsum(sums) - total) > threshold
    return hits


def _null_sums(m: np.ndarray, rng: np.random.Generator, draws: int) -> Iterator[np.ndarray]:
    """T = sum_i s_i m_i for `draws` random sign vectors, in blocks."""
    block = max(1, _BLOCK_CELLS // max(len(m), 1))
    for start in range(0, draws, block):
        yield np.where(rng.random((min(block, draws - start), len(m))) < 0.5, 1.0, -1.0) @ m
