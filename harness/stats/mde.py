"""How small a difference the current number of paired cases can detect (the minimum detectable difference).

For `rag-eval compare`: given the per-case values of a metric in runs A and B over the same n cases, the smallest
true difference in means that the two-sided paired test compare runs, at level alpha, would detect with the given
power, computed from the spread the two runs actually show. A delta smaller than this is not evidence of no
difference: it is below what the case set can see, and drafting more cases is how to see further.

0/1 metrics. Compare's sign-flip test on differences d_i in {-1, 0, +1} ignores the ties and is, exactly, the
two-sided binomial (McNemar) test on the D discordant cases: p = P(|2X - D| >= |W - L|), X ~ Binomial(D, 1/2),
with W cases better and L worse in B. Compare computes that p by enumerating every sign vector when there are few
cases and by Monte-Carlo sign flips otherwise, which estimate the same p; the power here is the exact test's.
Power is computed exactly, by summing over every outcome (W, L) of n cases under a true difference delta with the
observed share p_d of discordant cases: P(better) = (p_d + delta) / 2, P(worse) = (p_d - delta) / 2. A paired
difference can be at most p_d (every differing case going B's way), so the MDE is never above p_d; when even
delta = p_d has less than the wanted power, the difference is "not detectable with these cases".

Continuous metrics. The paired t-test's exact power, from the noncentral t distribution (numerical integration over
the chi distribution of the standard deviation; no scipy), with the observed standard deviation s_d of the
differences: delta = lambda * s_d / sqrt(n), lambda the noncentrality that gives the wanted power at n - 1 degrees
of freedom. The normal approximation, (z_a + z_b) * s_d / sqrt(n), is too small by a third at n = 5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["DETECTABLE", "MinimumDetectable", "NOT_DETECTABLE", "NO_SPREAD", "TOO_FEW", "binary_power",
           "mde_binary", "mde_continuous", "minimum_detectable_difference", "t_power", "t_quantile"]

DETECTABLE = "ok"
NOT_DETECTABLE = "not detectable with these cases"
NO_SPREAD = "no case differs"
TOO_FEW = "fewer than 2 cases"
_SDS = 12.0  # binomial counts further than this many standard deviations from the mean are left out (< 1e-30)
_GRID = 4001  # points of the integration grid over the chi distribution (Simpson's rule)


@dataclass(frozen=True)
class MinimumDetectable:
    """`mde` is in the metric's units (a difference of means); None unless `status` is `ok`: `not detectable
    with these cases` (even the largest possible difference has less than `power`), `no case differs` (the
    observed spread is 0, so there is nothing to scale by) or `fewer than 2 cases`. `method` is `exact sign test`
    for 0/1 metrics, `paired t` otherwise; `discordance` is the share of cases whose 0/1 value differs (None for
    continuous metrics)."""

    mde: float | None
    n: int
    method: str
    discordance: float | None
    alpha: float
    power: float
    status: str = DETECTABLE


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


@lru_cache(maxsize=64)
def _chi_grid(df: int) -> tuple[np.ndarray, np.ndarray]:
    """Points s and Simpson weights times the density of S = sqrt(chi-square(df) / df) = chi(df) / sqrt(df)."""
    s = np.linspace(0.0, 1 + 12 / math.sqrt(df), _GRID)
    u = s * math.sqrt(df)
    log_u = np.log(u, where=u > 0, out=np.full_like(u, -np.inf))
    powers = (df - 1) * log_u if df > 1 else np.zeros_like(u)
    density = np.exp(powers - u**2 / 2 - (df / 2 - 1) * math.log(2) - math.lgamma(df / 2)) * math.sqrt(df)
    weights = np.ones(_GRID)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return s, density * weights * (s[1] - s[0]) / 3


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    """Phi(x) through erfc (Numerical Recipes' Chebyshev fit, relative error below 1.2e-7), vectorised."""
    z = -x / math.sqrt(2)
    t = 1 / (1 + 0.5 * np.abs(z))
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    tail = t * np.exp(-z * z + poly)
    return 0.5 * np.where(z >= 0, tail, 2 - tail)


def t_power(noncentrality: float, df: int, critical: float) -> float:
    """P(|T| > critical) for T noncentral t with `df` degrees of freedom: T = (Z + lambda) / S,
    S = sqrt(chi-square(df) / df), integrated over S."""
    s, w = _chi_grid(df)
    return float(np.sum(w * (_normal_cdf(noncentrality - critical * s) + _normal_cdf(-noncentrality - critical * s))))


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (p in (0.5, 1)), by bisection on the central
    case of `t_power`: P(|T| > t) = 2 (1 - p)."""
    low, high = 0.0, 1e3
    while high - low > 1e-9:
        mid = (low + high) / 2
        low, high = (mid, high) if t_power(0.0, df, mid) > 2 * (1 - p) else (low, mid)
    return (low + high) / 2


def mde_continuous(n: int, sd_difference: float, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Minimum detectable difference of paired means under the paired t-test: lambda * s_d / sqrt(n), where
    lambda is the noncentrality at which the two-sided test at level alpha with n - 1 degrees of freedom has
    `power` (exact noncentral t, see `t_power`), s_d the sample standard deviation (n - 1 denominator) of the
    per-case differences B - A. None when n < 2 or s_d == 0."""
    _check(alpha, power)
    if n < 2 or sd_difference <= 0:
        return None
    critical = t_quantile(1 - alpha / 2, n - 1)
    low, high = 0.0, 200.0
    while high - low > 1e-7:
        mid = (low + high) / 2
        low, high = (low, mid) if t_power(mid, n - 1, critical) >= power else (mid, high)
    return high * sd_difference / math.sqrt(n)


def minimum_detectable_difference(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05,
                                  power: float = 0.8) -> MinimumDetectable:
    """The minimum detectable difference for paired per-case values a[i], b[i] of one metric.

    Metrics whose values are all 0 or 1 (hit@k, behaviour, quote_valid, passed) use `mde_binary` with the
    observed discordance p_d = #{a_i != b_i} / n; the others (rr, recall, facts) use `mde_continuous` with the
    observed standard deviation of b_i - a_i."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    if all(v in (0, 1) for v in (*a, *b)):
        discordance = sum(x != y for x, y in zip(a, b)) / n if n else 0.0
        mde = mde_binary(n, discordance, alpha=alpha, power=power)
        status = TOO_FEW if n < 2 else NO_SPREAD if discordance == 0 else NOT_DETECTABLE if mde is None \
            else DETECTABLE
        return MinimumDetectable(mde, n, "exact sign test", discordance, alpha, power, status)
    diffs = [y - x for x, y in zip(a, b)]
    sd = math.sqrt(sum((d - sum(diffs) / n) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    status = TOO_FEW if n < 2 else NO_SPREAD if sd == 0 else DETECTABLE
    return MinimumDetectable(mde_continuous(n, sd, alpha=alpha, power=power), n, "paired t", None, alpha, power,
                             status)
