"""How small a difference the current number of paired cases can detect (the minimum detectable difference).

For `rag-eval compare`: given the per-case values of a metric in runs A and B over the same n cases, the smallest
true difference in means that a two-sided paired test at level alpha would detect with the given power, computed
from the spread the two runs actually show. A delta smaller than this is not evidence of no difference: it is
below what the case set can see, and drafting more cases is how to see further.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["MinimumDetectable", "mde_binary", "mde_continuous", "minimum_detectable_difference"]


@dataclass(frozen=True)
class MinimumDetectable:
    """`mde` is in the metric's units (a difference of means); None when it cannot be estimated: fewer than 2
    cases, or no case differs between the runs (the observed spread is 0, so there is nothing to scale by).
    `method` is `mcnemar` for 0/1 metrics, `paired-normal` otherwise; `discordance` is the share of cases whose
    0/1 value differs (None for continuous metrics)."""

    mde: float | None
    n: int
    method: str
    discordance: float | None
    alpha: float
    power: float


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2), normal.inv_cdf(power)


def mde_binary(n: int, discordance: float, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Minimum detectable difference of paired proportions (McNemar's test, normal approximation, Connor 1987).

    With n cases of which a share p_d is discordant (1 in one run, 0 in the other) and a true difference
    delta = p_10 - p_01, the sample size formula is

        n = (z_a * sqrt(p_d) + z_b * sqrt(p_d - delta**2))**2 / delta**2,   z_a = z(1 - alpha/2), z_b = z(power)

    Solving it for delta (the larger root of the quadratic (n + z_b**2) delta**2 - 2 z_a sqrt(n p_d) delta
    + (z_a**2 - z_b**2) p_d = 0) gives

        delta = sqrt(p_d) * (z_a * sqrt(n) + z_b * sqrt(n - z_a**2 + z_b**2)) / (n + z_b**2)

    capped at sqrt(p_d) (a difference larger than that would need more discordant cases than observed; the
    result is then the cap). None when n < 2 or p_d == 0.
    """
    if n < 2 or discordance <= 0:
        return None
    if discordance > 1:
        raise ValueError(f"discordance is a share of cases, got {discordance}")
    z_a, z_b = _z(alpha, power)
    delta = math.sqrt(discordance) * (z_a * math.sqrt(n) + z_b * math.sqrt(max(n - z_a**2 + z_b**2, 0.0))) \
        / (n + z_b**2)
    return min(delta, math.sqrt(discordance))


def mde_continuous(n: int, sd_difference: float, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Minimum detectable difference of paired means (normal approximation of the paired t-test):

        delta = (z(1 - alpha/2) + z(power)) * s_d / sqrt(n)

    where s_d is the sample standard deviation (n - 1 denominator) of the per-case differences B - A.
    None when n < 2 or s_d == 0."""
    if n < 2 or sd_difference <= 0:
        return None
    z_a, z_b = _z(alpha, power)
    return (z_a + z_b) * sd_difference / math.sqrt(n)


def minimum_detectable_difference(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05,
                                  power: float = 0.8) -> MinimumDetectable:
    """The minimum detectable difference for paired per-case values a[i], b[i] of one metric.

    Metrics whose values are all 0 or 1 (hit@k, behaviour, quote_valid) use `mde_binary` with the observed
    discordance p_d = #{a_i != b_i} / n; the others (rr, recall, facts) use `mde_continuous` with the observed
    standard deviation of b_i - a_i."""
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    if all(v in (0, 1) for v in (*a, *b)):
        discordance = sum(x != y for x, y in zip(a, b)) / n if n else 0.0
        return MinimumDetectable(mde_binary(n, discordance, alpha=alpha, power=power), n, "mcnemar", discordance,
                                 alpha, power)
    diffs = [y - x for x, y in zip(a, b)]
    sd = math.sqrt(sum((d - sum(diffs) / n) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    return MinimumDetectable(mde_continuous(n, sd, alpha=alpha, power=power), n, "paired-normal", None, alpha,
                             power)
