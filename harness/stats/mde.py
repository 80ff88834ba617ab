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
def _outcomes(n: int, discordance: float, alpha: float) -> tuple[np.ndarray, list[tuple[int, float, int]]]:
    """What `binary_power` sums over, independent of delta: the log-factorial table and, for every discordant
    count D worth counting, (D, P(D discordant of n), k) where the exact test rejects when min(W, L) <= k
    (k = the largest with P(X <= k) + P(X >= D - k) <= alpha under Binomial(D, 1/2); D without one is left out)."""
    logf = _log_comb(n)
    spread = _SDS * math.sqrt(n * discordance * (1 - discordance)) + 1
    lo, hi = max(1, int(n * discordance - spread)), min(n, int(math.ceil(n * discordance + spread)))
    rows = []
    for d in range(lo, hi + 1):
        w = np.arange((d + 1) // 2)
        lower = np.cumsum(np.exp(logf[d] - logf[w] - logf[d - w] - d * math.log(2)))  # P(X <= k), below the middle
        hits = np.nonzero(2 * lower <= alpha * (1 + 1e-9))[0]
        if hits.size:
            log_p = logf[n] - logf[d] - logf[n - d] + d * math.log(discordance) + \
                ((n - d) * math.log1p(-discordance) if discordance < 1 else (0.0 if d == n else -math.inf))
            rows.append((d, math.exp(log_p), int(hits[-1])))
    return logf, rows


def binary_power(n: int, discordance: float, delta: float, *, alpha: float = 0.05) -> float:
    """Exact power of compare's two-sided sign test (exact McNemar) at level alpha, for n cases of which a share
    `discordance` differ between the runs, when the true difference is delta (0 <= delta <= discordance):
    the sum over D ~ Binomial(n, p_d) discordant cases and W ~ Binomial(D, (1 + delta / p_d) / 2) of the
    outcomes the test rejects."""
    if not 0 <= delta <= discordance + 1e-12 or not 0 < discordance <= 1:
        raise ValueError(f"need 0 <= delta <= discordance <= 1, got delta {delta}, discordance {discordance}")
    logf, rows = _outcomes(n, discordance, alpha)
    q = min(1.0, (1 + delta / discordance) / 2)
    return min(1.0, sum(p_d * _tails(d, k, q, logf) for d, p_d, k in rows))


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


def minimum_detectable_difference(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05,
                                  power: float = 0.8, seed: int = DEFAULT_SEED) -> MinimumDetectable:
    """The minimum detectable difference for paired per-case values a[i], b[i] of one metric (module
    docstring): metrics whose values are all 0 or 1 use `mde_binary` with the observed discordance
    p_d = #{a_i != b_i} / n; the others `mde_sign_model` with the observed sizes |b_i - a_i| of the cases that
    differ. `seed` is used only when the power is simulated."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    sizes = np.abs(np.asarray(b, dtype=float) - np.asarray(a, dtype=float))
    sizes = sizes[sizes > 1e-12]
    d = len(sizes)
    if all(v in (0, 1) for v in (*a, *b)):
        discordance = d / n if n else 0.0
        mde = mde_binary(n, discordance, alpha=alpha, power=power) if smallest_p(d) <= alpha else None
        method, largest = EXACT_SIGN, discordance
    else:
        mde, method = mde_sign_model(sizes, n, alpha=alpha, power=power, seed=seed) if n else (None, SIGN_MODEL)
        discordance, largest = None, float(sizes.sum()) / n if n else 0.0
    status = TOO_FEW if n < 2 else NO_SPREAD if d == 0 else NOT_DETECTABLE if mde is None else DETECTABLE
    return MinimumDetectable(mde if status == DETECTABLE else None, n, method, discordance, alpha, power, status,
                             d, largest)
