"""The interval compare prints for the mean paired difference: a score interval that lets the number of differing
cases vary, so its far end is not capped by what was observed.

**0/1 metrics: Tango's score interval** for the difference of two paired proportions (Tango 1998, "Equivalence
test and confidence interval for the difference in proportions for the paired-sample design", Statistics in
Medicine 17: 891-908; recommended by Newcombe 1998 and Fagerland, Lydersen and Laake 2014 for its coverage near
the nominal level at small counts). Of n paired cases, W go B's way (0 -> 1), L the other way, the rest tie;
delta = P(win) - P(loss) is estimated by (W - L) / n. For a candidate delta, the loss probability q that maximises
the multinomial likelihood under P(win) = q + delta is the larger root of

    2n q^2 + w q - L delta (1 - delta) = 0,   w = -(W + L) + (2n - W + L) delta,
    q = (sqrt(w^2 + 8 n L delta (1 - delta)) - w) / (4n),

and the score statistic is Z(delta) = (W - L - n delta) / sqrt(n (2q + delta (1 - delta))). The 95 % interval is
every delta with |Z(delta)| <= 1.96; Z falls as delta rises, so each end is found by bisection to 2**-60. The
variance is taken at the candidate delta with the discordance re-estimated there, which is what lets the interval
reach beyond the observed delta when every differing case went one way (8 of 195 all better: [+0.021, +0.079]),
and keeps it from collapsing when none differ (0 of 195: [-0.019, +0.019]). At delta = 0, Z is (W - L) /
sqrt(W + L), McNemar's statistic, so the interval excludes 0 exactly when the normal approximation of McNemar's
test rejects at 0.05.

**Other metrics: the same interval, scaled.** With per-case differences d_i of unequal sizes (rr, recall@k, a 0/1
metric averaged over repeats), wins and losses are counted in units of u = sum d_i^2 / sum |d_i| (the differing
cases' size, weighted by size): W = sum of the positive d_i / u, L = sum of the negative |d_i| / u, and the
interval of Tango's statistic on (W, L, n), times u. The first two moments of these counts are those of the
differences (sum d = u (W - L), sum d^2 = u^2 (W + L)), so for 0/1 differences it is Tango's interval itself, and
at delta = 0 the statistic is sum d / sqrt(sum d^2): the normal approximation of the sign-flip test compare runs.
When no case differs, u is 1 (a whole case's worth, the largest one case can differ by). This is an approximation
whose coverage is checked by simulation (tests/stats/test_crosscheck_coverage.py), not a theorem.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .precision_recall import Z_95

__all__ = ["Z_95", "paired_score_interval", "tango_interval", "tango_z"]

_BISECT_STEPS = 62  # delta in [-1, 1] to within 2**-60
_EPS = 1e-12


def tango_z(wins: float, losses: float, n: int, delta: float) -> float:
    """Tango's score statistic for `delta` = P(win) - P(loss) given W wins and L losses among n paired cases (module
    docstring); +-inf where the restricted variance is 0 and the observed difference is not delta."""
    if n <= 0:
        raise ValueError(f"tango_z needs at least one case, got n = {n}")
    w = -(wins + losses) + (2 * n - wins + losses) * delta
    q = (math.sqrt(max(w * w + 8 * n * losses * delta * (1 - delta), 0.0)) - w) / (4 * n)
    variance = n * (2 * q + delta * (1 - delta))
    numerator = wins - losses - n * delta
    if variance <= _EPS * n:
        return 0.0 if abs(numerator) <= _EPS * n else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def tango_interval(wins: float, losses: float, n: int, *, z: float = Z_95) -> tuple[float, float]:
    """Tango's score interval for the paired difference of proportions (W - L) / n (module docstring): every delta
    in [-1, 1] with |Z(delta)| <= z."""
    if not (0 <= wins and 0 <= losses and wins + losses <= n + _EPS * n):
        raise ValueError(f"tango_interval: need 0 <= wins, losses and wins + losses <= n, got {wins}, {losses}, {n}")
    return (_crossing(lambda d: tango_z(wins, losses, n, d), z),
            _crossing(lambda d: tango_z(wins, losses, n, d), -z))


def _crossing(statistic: Callable[[float], float], level: float) -> float:
    """Where the falling function `statistic` of delta crosses `level` on [-1, 1] (an end when it never does)."""
    low, high = -1.0, 1.0
    if statistic(low) <= level:
        return low
    if statistic(high) >= level:
        return high
    for _ in range(_BISECT_STEPS):
        mid = (low + high) / 2
        if statistic(mid) > level:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def paired_score_interval(d: np.ndarray, *, z: float = Z_95) -> tuple[float, float]:
    """The 95 % interval of the mean of the paired differences d (module docstring): Tango's for 0/1 differences,
    the scaled one otherwise."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    if n == 0:
        raise ValueError("paired_score_interval needs at least one case")
    size = float(np.abs(d).sum())
    unit = float((d * d).sum()) / size if size > _EPS else 1.0
    wins, losses = float(d[d > 0].sum()) / unit, float(-d[d < 0].sum()) / unit
    low, high = tango_interval(min(wins, n), min(losses, n - min(wins, n)), n, z=z)
    return low * unit, high * unit
