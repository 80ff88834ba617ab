"""Agreement between reviewers who gave categorical verdicts to the same items: pure statistics, no I/O.

The input is one mapping per item (a claim, a drafted case): reviewer name -> verdict. An item rated by fewer than
two reviewers says nothing about agreement and is left out. Definitions (n items, categories c, k):

- Percent agreement: the share of items on which every reviewer who rated it gave the same verdict.
- Cohen's kappa (exactly two reviewers, each rating every item): kappa = (p_o - p_e) / (1 - p_e), where
  p_o is the percent agreement and p_e = sum_c p1(c) * p2(c) the agreement expected by chance from each
  reviewer's own share p_r(c) of verdicts in category c.
- Krippendorff's alpha, nominal (any number of reviewers, missing ratings allowed): every item u with m_u >= 2
  ratings adds, for each ordered pair of its ratings from different reviewers, 1 / (m_u - 1) to the
  coincidence cell (c, k). With n_c the total of row c and n = sum_c n_c (the pairable ratings),
  alpha = 1 - D_o / D_e = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c * n_k.
  Per item, sum_{c != k} o_ck = (m_u**2 - sum_c n_uc**2) / (m_u - 1), n_uc being its ratings in category c.

Degenerate cases are undefined, never 1.0 by convention: when every rating falls in one category, chance
agreement is total (p_e = 1, D_e = 0), both coefficients are 0/0 and the functions return None; the caller shows
the percent agreement and the reason from `undefined_reason`. With no item rated twice, every figure is None.

Interval: a percentile bootstrap over items. Each resample draws n items with replacement (kept as a count of
draws per item, so one matrix product evaluates many resamples), recomputes the statistic, and the 2.5th and
97.5th percentiles of the defined values are reported with the number of resamples on which the statistic was
undefined.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from .defaults import DEFAULT_RESAMPLES, DEFAULT_SEED

__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "NO_VARIATION", "Agreement", "AgreementReport", "DisagreementItem",
           "Interval", "bootstrap_interval",
           "cohen_kappa", "krippendorff_alpha_nominal", "measure_agreement", "percent_agreement", "undefined_reason"]

_BLOCK_CELLS = 2_000_000  # resamples x items per block of draws: bounds memory

Ratings = Mapping[str, str]  # reviewer -> verdict, for one item
NO_VARIATION = "interval undefined (no variation)"


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval. `low`/`high` are None when no resample gave a defined value."""

    low: float | None
    high: float | None
    level: float
    resamples: int
    seed: int
    undefined_resamples: int  # resamples on which the statistic was undefined (left out of the percentiles)
    constant: bool = False  # one item, or a reviewer who gave one verdict throughout: nothing varies to resample

    def to_dict(self) -> dict:
        return asdict(self) | {"note": NO_VARIATION if self.no_variation else None}

    @property
    def no_variation(self) -> bool:
        """Every defined resample gave the same value because the ratings do not vary (one reviewer always gives
        one verdict; a single item): the bootstrap cannot show any uncertainty, so the interval says nothing. (Two
        reviewers who agree on every one of many mixed verdicts also give a zero-width interval; that one is shown.)"""
        return self.constant and self.low is not None and self.low == self.high

    def text(self) -> str:
        """`[low, high]` to three decimals, `interval undefined (no variation)`, or `n/a` (no defined value)."""
        if self.low is None or self.high is None:
            return "n/a"
        return NO_VARIATION if self.no_variation else f"[{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class Agreement:
    """Agreement over the items rated by two or more reviewers. `coefficient` is "kappa" for exactly two
    reviewers and "alpha" (Krippendorff, nominal) for more; `value` is None when undefined, `reason` says why."""

    items: int
    reviewers: tuple[str, ...]
    percent_agreement: float | None
    percent_interval: Interval
    coefficient: str
    value: float | None
    interval: Interval
    reason: str | None


def _rated(items: Sequence[Ratings]) -> list[Ratings]:
    return [item for item in items if len(item) >= 2]


def _table(items: Sequence[Ratings]) -> tuple[np.ndarray, list[str], list[str]]:
    """Items x reviewers matrix of category codes (-1 = no rating), the reviewers and the categories."""
    reviewers = sorted({r for item in items for r in item})
    categories = sorted({v for item in items for v in item.values()})
    code = {c: i for i, c in enumerate(categories)}
    table = np.full((len(items), len(reviewers)), -1, dtype=np.int64)
    for i, item in enumerate(items):
        for j, reviewer in enumerate(reviewers):
            if reviewer in item:
                table[i, j] = code[item[reviewer]]
    return table, reviewers, categories


def _counts(table: np.ndarray, k: int) -> np.ndarray:
    """Items x categories: how many ratings of each item fall in each category."""
    return np.stack([(table == c).sum(axis=1) for c in range(k)], axis=1).astype(float)


# Each statistic below has a per-item part (computed once) and a combination of weighted sums of those parts, so
# that one matrix product with the bootstrap weights evaluates thousands of resamples at once.

def _agree_parts(table: np.ndarray, k: int) -> np.ndarray:
    counts = _counts(table, k)
    return (counts.max(axis=1) == counts.sum(axis=1)).astype(float)[:, None]


def _agree_combine(sums: np.ndarray, n: np.ndarray) -> np.ndarray:
    return sums[:, 0] / n


def _kappa_parts(table: np.ndarray, k: int) -> np.ndarray:
    a, b = table[:, 0], table[:, 1]
    onehot = [(a == c).astype(float) for c in range(k)] + [(b == c).astype(float) for c in range(k)]
    return np.stack([(a == b).astype(float)] + onehot, axis=1)


def _kappa_combine(sums: np.ndarray, n: np.ndarray) -> np.ndarray:
    k = (sums.shape[1] - 1) // 2
    p_o = sums[:, 0] / n
    p_e = (sums[:, 1:1 + k] * sums[:, 1 + k:]).sum(axis=1) / n ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        # p_e == 1 only when both reviewers used one and the same category: 0/0, undefined
        return np.where(p_e < 1 - 1e-12, (p_o - p_e) / (1 - p_e), np.nan)


def _alpha_parts(table: np.ndarray, k: int) -> np.ndarray:
    counts = _counts(table, k)
    m = counts.sum(axis=1)
    disagreement = (m ** 2 - (counts ** 2).sum(axis=1)) / (m - 1)
    return np.concatenate([disagreement[:, None], counts], axis=1)


def _alpha_combine(sums: np.ndarray, n_items: np.ndarray) -> np.ndarray:
    observed, n_c = sums[:, 0], sums[:, 1:]
    n = n_c.sum(axis=1)
    expected = n ** 2 - (n_c ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # expected == 0: every pairable rating is in one category, 0/0, undefined
        return np.where(expected > 1e-12, 1 - (n - 1) * observed / expected, np.nan)


_STATISTICS: dict[str, tuple[Callable[[np.ndarray, int], np.ndarray], Callable[[np.ndarray, np.ndarray],
                                                                                np.ndarray]]] = {
    "percent_agreement": (_agree_parts, _agree_combine),
    "kappa": (_kappa_parts, _kappa_combine),
    "alpha": (_alpha_parts, _alpha_combine),
}


def _point(name: str, items: Sequence[Ratings]) -> float | None:
    rated = _rated(items)
    if not rated:
        return None
    table, _, categories = _table(rated)
    parts, combine = _STATISTICS[name]
    values = parts(table, len(categories))
    value = combine(values.sum(axis=0)[None, :], np.array([float(len(rated))]))[0]
    return None if np.isnan(value) else float(value)


def percent_agreement(items: Sequence[Ratings]) -> float | None:
    """Share of the items rated by two or more reviewers on which all their verdicts are equal; None if none."""
    return _point("percent_agreement", items)


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two reviewers' verdicts on the same items, in the same order (see the module docstring).
    None when undefined: no items, or both reviewers used one and the same category for every item."""
    if len(first) != len(second):
        raise ValueError(f"cohen_kappa: {len(first)} verdicts against {len(second)}; rate the same items")
    return _point("kappa", [{"1": a, "2": b} for a, b in zip(first, second)])


def krippendorff_alpha_nominal(items: Sequence[Ratings]) -> float | None:
    """Krippendorff's alpha for nominal verdicts, missing ratings allowed (see the module docstring). Items with
    fewer than two ratings are left out. None when undefined: no item rated twice, or a single category."""
    return _point("alpha", items)


def undefined_reason(items: Sequence[Ratings]) -> str | None:
    """Why kappa and alpha are undefined on these items, or None when they are defined."""
    rated = _rated(items)
    if not rated:
        return "no item was rated by two or more reviewers"
    categories = {v for item in rated for v in item.values()}
    if len(categories) == 1:
        return (f"every verdict is {next(iter(categories))!r}: chance agreement is total, so the coefficient is "
                "0/0; read the percent agreement instead")
    return None


def _draw_counts(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """Resamples x items: how often each item was drawn when n items are drawn with replacement."""
    drawn = rng.integers(0, n, size=(resamples, n)) + np.arange(resamples)[:, None] * n
    return np.bincount(drawn.ravel(), minlength=resamples * n).reshape(resamples, n).astype(float)


def bootstrap_interval(name: str, items: Sequence[Ratings], *, seed: int = DEFAULT_SEED,
                       resamples: int = DEFAULT_RESAMPLES, level: float = 0.95) -> Interval:
    """Percentile bootstrap interval over items (rated by >= 2 reviewers) of `name`: "percent_agreement",
    "kappa" (the two reviewers must rate every item) or "alpha". One numpy generator seeded with `seed`."""
    if resamples < 1 or seed < 0 or not 0 < level < 1:
        raise ValueError(f"bootstrap: resamples >= 1, seed >= 0 and 0 < level < 1, got {resamples}, {seed}, {level}")
    rated = _rated(items)
    if not rated:
        return Interval(None, None, level, resamples, seed, resamples)
    table, _, categories = _table(rated)
    parts, combine = _STATISTICS[name]
    values = parts(table, len(categories))
    rng = np.random.default_rng(seed)
    n = len(rated)
    block = max(1, _BLOCK_CELLS // n)
    stats = []
    for start in range(0, resamples, block):
        weights = _draw_counts(rng, n, min(block, resamples - start))
        stats.append(combine(weights @ values, np.full(len(weights), float(n))))
    drawn = np.concatenate(stats)
    defined = drawn[~np.isnan(drawn)]
    undefined = int(len(drawn) - len(defined))
    if not len(defined):
        return Interval(None, None, level, resamples, seed, undefined)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    constant = n == 1 or any(len(np.unique(column[column >= 0])) == 1 for column in table.T)  # a one-verdict reviewer
    return Interval(float(low), float(high), level, resamples, seed, undefined, constant)


def measure_agreement(items: Sequence[Ratings], *, seed: int = DEFAULT_SEED,
                      resamples: int = DEFAULT_RESAMPLES) -> Agreement:
    """Percent agreement and kappa (two reviewers in all) or alpha (more), with bootstrap intervals, over the
    items rated by two or more reviewers."""
    rated = _rated(items)
    reviewers = tuple(sorted({r for item in rated for r in item}))
    coefficient = "kappa" if len(reviewers) <= 2 else "alpha"
    value = _point(coefficient, rated)
    return Agreement(
        items=len(rated), reviewers=reviewers, percent_agreement=percent_agreement(rated),
        percent_interval=bootstrap_interval("percent_agreement", rated, seed=seed, resamples=resamples),
        coefficient=coefficient, value=value,
        interval=bootstrap_interval(coefficient, rated, seed=seed, resamples=resamples),
        reason=undefined_reason(rated) if value is None else None)


class DisagreementItem(Protocol):
    """What an agreement report needs of a disagreement, whatever the reviewed item is (a claim, a draft)."""

    @property
    def open(self) -> bool: ...

    def to_json(self) -> dict[str, Any]: ...

    def lines(self) -> list[str]:
        """The item, then one indented line per reviewer and one for the resolution if any."""
        ...


D = TypeVar("D", bound=DisagreementItem)


@dataclass(frozen=True)
class AgreementReport(Generic[D]):
    """The agreement figures over the items (`unit`: claims, drafts) two or more reviewers rated, and every
    disagreement among them."""

    agreement: Agreement
    disagreements: tuple[D, ...]
    unit: str = "claims"

    @property
    def open_disagreements(self) -> int:
        return sum(d.open for d in self.disagreements)

    def to_json(self) -> dict[str, Any]:
        """`claims` (or the report's `unit`: the items rated by two or more reviewers), `reviewers`,
        `percent_agreement` and its interval, `kappa` (two reviewers) or `alpha` (more) with `interval`,
        `undefined_reason` and `disagreements`."""
        a = self.agreement
        return {self.unit: a.items, "reviewers": list(a.reviewers), "percent_agreement": a.percent_agreement,
                "percent_agreement_interval": a.percent_interval.to_dict(), a.coefficient: a.value,
                "interval": a.interval.to_dict(), "undefined_reason": a.reason,
                "disagreements": [d.to_json() for d in self.disagreements]}
