"""How small a difference the current paired cases can detect: the minimum detectable difference (MDE) of the test
`rag-eval compare` runs.

Given the per-case values of one metric in runs A and B over the same n cases, the MDE is the smallest true
difference of means that compare's two-sided sign-flip test (`harness/stats/paired.py`) at level alpha detects
with the given power, under a model built from what the two runs show. A delta smaller than it is not evidence of
no difference: it is below what the case set can see, and drafting more cases is how to see further.
`minimum_detectable_difference` is the one entry point; the model depends on the metric's values:

- 0/1 metrics (hit@k, behaviour, quote_valid, passed): the sign-flip test on d_i in {-1, 0, +1} is exactly the
  two-sided binomial (McNemar) test on the D discordant cases, and compare computes that p exactly. The power is
  exact too, summed over every outcome of n cases with the observed share p_d of discordant cases, D itself
  random: P(better) = (p_d + delta) / 2, P(worse) = (p_d - delta) / 2, ties at 1 - p_d (`binary_power`).
- Other metrics (rr, fractional recall@k, facts): the sign model of `harness/stats/signs.py`, conditional on the
  observed differences: the ties stay ties, the D differing cases keep their sizes |d_i|, and each goes B's way
  with probability q, so delta = (2q - 1) * mad (mad: the mean absolute difference over the n cases). The power
  of the exact sign-flip test is computed exactly over every sign vector when D <= 16 (or when every size is
  equal), and simulated with a fixed seed above (`SimulatedPower`, 4,000 random orders of the differing cases:
  a standard deviation of 0.006 at 80 % across seeds).

Under either model no difference larger than the observed cases allow can be true: p_d for 0/1 metrics (every
discordant case going one way), mad otherwise; the MDE never exceeds it. It is "not detectable with these cases"
when even that difference has less than the wanted power, and always when 2 / 2**D > alpha: with D differing
cases the smallest p the test can give is 2 / 2**D (every case one way), so with D <= 5 at alpha 0.05 nothing can
be significant.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .defaults import DEFAULT_SEED
from .signs import SignTable, SimulatedPower, sign_table, smallest_p

__all__ = ["DETECTABLE", "EXACT_SIGN", "MinimumDetectable", "NOT_DETECTABLE", "NO_SPREAD", "SIGN_MODEL",
           "SIGN_MODEL_SIMULATED", "TOO_FEW", "binary_power", "mde_binary", "mde_sign_model",
           "minimum_detectable_difference"]

DETECTABLE = "ok"
NOT_DETECTABLE = "not detectable with these cases"
NO_SPREAD = "no case differs"
TOO_FEW = "fewer than 2 cases"
EXACT_SIGN = "exact sign test"  # 0/1 metrics
SIGN_MODEL = "sign-flip, exact"  # other metrics, every sign vector
SIGN_MODEL_SIMULATED = "sign-flip, simulated"  # other metrics, D > 16 of unequal sizes
_SDS = 12.0  # binomial counts further than this many standard deviations from the mean are left out (< 1e-30)
_Q_TOLERANCE = 1e-6
_RESTART = 64  # binary_power: rows between tails summed outright (the others by one step each)


@dataclass(frozen=True)
class MinimumDetectable:
    """`mde` is in the metric's units (a difference of means); None unless `status` is `ok`: `not detectable
    with these cases` (2 / 2**D > alpha, or even `largest` has less than `power`), `no case differs` or `fewer
    than 2 cases`. `method` is `exact sign test` for 0/1 metrics, `sign-flip, exact` or `sign-flip, simulated`
    otherwise; `discordance` is the share of cases whose 0/1 value differs (None for other metrics); `differing`
    is D; `largest` the largest difference the observed cases allow (p_d, or the mean absolute difference)."""

    mde: float | None
    n: int
    method: str
    discordance: float | None
    alpha: float
    power: float
    status: str = DETECTABLE
    differing: int = 0
    largest: float = 0.0


def _check(alpha: float, power: float) -> None:
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")


def _log_comb(n: int) -> np.ndarray:
    """log C(d, w) needs log d!: the table of log k! for k = 0..n."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1)))))


@lru_cache(maxsize=64)
def _outcomes(n: int, discordance: float, alpha: float) -> tuple[np.ndarray, _Rows | None]:
    """What `binary_power` sums over, independent of delta: the log-factorial table and the discordant counts D
    worth counting (`_Rows`: consecutive D, P(D discordant of n), and k where the exact test rejects when
    min(W, L) <= k: the largest with P(X <= k) + P(X >= D - k) <= alpha under Binomial(D, 1/2)); a D without such
    a k is left out (the smallest ones: they come first), and None when no D has one."""
    logf = _log_comb(n)
    spread = _SDS * math.sqrt(n * discordance * (1 - discordance)) + 1
    lo, hi = max(1, int(n * discordance - spread)), min(n, int(math.ceil(n * discordance + spread)))
    counts, probs, ks = [], [], []
    for d in range(lo, hi + 1):
        k = _critical(d, alpha, logf)
        if k is not None:
            log_p = logf[n] - logf[d] - logf[n - d] + d * math.log(discordance) + \
                ((n - d) * math.log1p(-discordance) if discordance < 1 else (0.0 if d == n else -math.inf))
            counts.append(d)
            probs.append(math.exp(log_p))
            ks.append(k)
    if not counts:
        return logf, None
    return logf, _Rows(np.array(counts), np.array(probs), np.array(ks))


@dataclass(frozen=True)
class _Rows:
    counts: np.ndarray  # D, consecutive
    probs: np.ndarray  # P(D discordant of n)
    ks: np.ndarray  # the test rejects when min(W, L) <= k


def _critical(d: int, alpha: float, logf: np.ndarray) -> int | None:
    """The largest k below the middle with 2 P(X <= k) <= alpha, X ~ Binomial(d, 1/2); None when there is none.
    P(X <= w) is summed from _SDS standard deviations below the middle (what lies further is below 1e-30), so the
    work per d is its square root, not d."""
    top = (d + 1) // 2
    start = max(0, int(d / 2 - _SDS * math.sqrt(d) / 2) - 1)
    w = np.arange(start, top)
    lower = np.cumsum(np.exp(logf[d] - logf[w] - logf[d - w] - d * math.log(2)))  # P(X <= k), below the middle
    hits = np.nonzero(2 * lower <= alpha * (1 + 1e-9))[0]
    return int(start + hits[-1]) if hits.size else None


def binary_power(n: int, discordance: float, delta: float, *, alpha: float = 0.05) -> float:
    """Exact power of compare's two-sided sign test (exact McNemar) at level alpha, for n cases of which a share
    `discordance` differ between the runs, when the true difference is delta (0 <= delta <= discordance):
    the sum over D ~ Binomial(n, p_d) discordant cases and W ~ Binomial(D, (1 + delta / p_d) / 2) of the
    outcomes the test rejects."""
    if not 0 <= delta <= discordance + 1e-12 or not 0 < discordance <= 1:
        raise ValueError(f"need 0 <= delta <= discordance <= 1, got delta {delta}, discordance {discordance}")
    logf, rows = _outcomes(n, discordance, alpha)
    if rows is None:
        return 0.0
    q = min(1.0, (1 + delta / discordance) / 2)
    return min(1.0, float(rows.probs @ _rejecting(rows, q, logf)))


def _rejecting(rows: _Rows, q: float, logf: np.ndarray) -> np.ndarray:
    """P(W <= k_D) + P(W >= D - k_D) for W ~ Binomial(D, q), every row. Every `_RESTART`-th row's tails are summed
    outright; the rows between follow from W_(D+1) = W_D + one more case won with probability q, and from
    k_(D+1) being k_D or k_D + 1 (P(X <= k) only falls as D grows, by at most half of one term), one term per row:
        P(W_(D+1) <= k) = P(W_D <= k) - q P(W_D = k),  P(W_(D+1) >= t) = P(W_D >= t) + q P(W_D = t - 1),
    then the term at k_D + 1 added (k grew) or the one at t = D - k_D taken away (it did not)."""
    d, k = rows.counts, rows.ks
    if q >= 1.0:  # every discordant case goes B's way: W = D, and D >= D - k always
        return np.ones(len(d))
    grew = np.diff(k)
    if np.any((grew < 0) | (grew > 1)) or np.any(np.diff(d) != 1):  # not the shape the steps assume
        return np.array([_tails(int(x), int(y), q, logf) for x, y in zip(d, k)])
    log_q, log_r = math.log(q), math.log1p(-q)

    def pmf(dd: np.ndarray, w: np.ndarray) -> np.ndarray:
        return np.exp(logf[dd] - logf[w] - logf[dd - w] + w * log_q + (dd - w) * log_r)

    prev, nxt, kp = d[:-1], d[1:], k[:-1]
    lower_step = -q * pmf(prev, kp) + np.where(grew == 1, pmf(nxt, np.minimum(kp + 1, nxt)), 0.0)
    upper_step = q * pmf(prev, prev - kp - 1) - np.where(grew == 0, pmf(nxt, prev - kp), 0.0)
    out = np.empty(len(d))
    for start in range(0, len(d), _RESTART):  # restarts keep the rounding of the running sums small
        stop = min(len(d), start + _RESTART)
        low, high = _tails_apart(int(d[start]), int(k[start]), q, logf)
        out[start:stop] = (np.clip(low + np.concatenate(([0.0], np.cumsum(lower_step[start:stop - 1]))), 0, 1)
                           + np.clip(high + np.concatenate(([0.0], np.cumsum(upper_step[start:stop - 1]))), 0, 1))
    return out


def _tails_apart(d: int, k: int, q: float, logf: np.ndarray) -> tuple[float, float]:
    """(P(W <= k), P(W >= d - k)) for W ~ Binomial(d, q), q < 1, summed over the w within _SDS standard
    deviations of the mean (the terms further out are below 1e-30)."""
    mean, spread = d * q, _SDS * math.sqrt(d * q * (1 - q)) + 1
    first, last = max(0, int(mean - spread)), min(d, int(math.ceil(mean + spread)))
    low, high = np.arange(first, min(k, last) + 1), np.arange(max(d - k, first), last + 1)
    log_q, log_r = math.log(q), math.log1p(-q)
    return tuple(float(np.exp(logf[d] - logf[w] - logf[d - w] + w * log_q + (d - w) * log_r).sum())
                 for w in (low, high))  # type: ignore[return-value]


def _tails(d: int, k: int, q: float, logf: np.ndarray) -> float:
    """P(W <= k) + P(W >= d - k) for W ~ Binomial(d, q)."""
    w = np.concatenate((np.arange(0, k + 1), np.arange(d - k, d + 1)))
    if q >= 1.0:
        return float(np.any(w == d))
    pmf = np.exp(logf[d] - logf[w] - logf[d - w] + w * math.log(q) + (d - w) * math.log1p(-q))
    return float(pmf.sum())


def mde_binary(n: int, discordance: float, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """The smallest true difference of paired proportions that the exact sign test detects with `power`, for n
    cases of which a share `discordance` differ (see `binary_power`), found by bisection to 1e-6. Never above
    `discordance`; None when n < 2, no case differs, or even delta = discordance has less power."""
    _check(alpha, power)
    if discordance > 1:
        raise ValueError(f"discordance is a share of cases, got {discordance}")
    if n < 2 or discordance <= 0 or binary_power(n, discordance, discordance, alpha=alpha) < power:
        return None
    low, high = 0.0, discordance
    while high - low > 1e-6:
        mid = (low + high) / 2
        low, high = (low, mid) if binary_power(n, discordance, mid, alpha=alpha) >= power else (mid, high)
    return high



def mde_sign_model(sizes: Sequence[float] | np.ndarray, n: int, *, alpha: float = 0.05, power: float = 0.8,
                   seed: int = DEFAULT_SEED) -> tuple[float | None, str]:
    """The smallest true difference of means the two-sided sign-flip test detects with `power` under the sign
    model (module docstring), for the sizes |d_i| > 0 of the D differing cases among n; with the method
    (`sign-flip, exact` or `sign-flip, simulated`). Found by bisection on q to 1e-6; never above the mean absolute
    difference. None when no case differs or 2 / 2**D > alpha."""
    _check(alpha, power)
    m = np.asarray(sizes, dtype=float)
    table = sign_table(m)
    method = SIGN_MODEL if table is not None else SIGN_MODEL_SIMULATED
    if not len(m) or smallest_p(len(m)) > alpha:
        return None, method
    power_at = _power_function(table, m, alpha, seed)
    if power_at(1.0) < power:
        return None, method
    low, high = 0.5, 1.0
    while high - low > _Q_TOLERANCE:
        mid = (low + high) / 2
        low, high = (low, mid) if power_at(mid) >= power else (mid, high)
    return (2 * high - 1) * float(m.sum()) / n, method


def _power_function(table: SignTable | None, sizes: np.ndarray, alpha: float, seed: int) -> Callable[[float], float]:
    """q -> the power of the test at level alpha under the sign model: exact from the table, else simulated."""
    if table is None:
        return SimulatedPower(sizes, alpha, seed=seed).power
    rejected = table.rejected(alpha)
    return lambda q: table.prob(q, rejected)


def minimum_detectable_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                                  alpha: float = 0.05, power: float = 0.8, seed: int = DEFAULT_SEED
                                  ) -> MinimumDetectable:
    """The minimum detectable difference for paired per-case values a[i], b[i] of one metric (module
    docstring): metrics whose values are all 0 or 1 use `mde_binary` with the observed discordance
    p_d = #{a_i != b_i} / n; the others `mde_sign_model` with the observed sizes |b_i - a_i| of the cases that
    differ. `seed` is used only when the power is simulated."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    values_a, values_b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    sizes = np.abs(values_b - values_a)
    sizes = sizes[sizes > 1e-12]
    d = len(sizes)
    if all(bool(np.all((v == 0) | (v == 1))) for v in (values_a, values_b)):
        discordance = d / n if n else 0.0
        mde = mde_binary(n, discordance, alpha=alpha, power=power) if smallest_p(d) <= alpha else None
        method, largest = EXACT_SIGN, discordance
    else:
        mde, method = mde_sign_model(sizes, n, alpha=alpha, power=power, seed=seed) if n else (None, SIGN_MODEL)
        discordance, largest = None, float(sizes.sum()) / n if n else 0.0
    status = TOO_FEW if n < 2 else NO_SPREAD if d == 0 else NOT_DETECTABLE if mde is None else DETECTABLE
    return MinimumDetectable(mde if status == DETECTABLE else None, n, method, discordance, alpha, power, status,
                             d, largest)
