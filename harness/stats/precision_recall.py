"""Precision and recall per category of one rater (a judge) against a reference rater (people), on the same items:
pure statistics, no I/O.

For a category c, over the items both rated:
- precision = #{judge c and people c} / #{judge c}: how often the judge's c is the people's c (None when the judge
  never said c);
- recall = #{judge c and people c} / #{people c}: how many of the people's c the judge finds (None when people
  never said c).
A category only the judge uses (its `unverified`) is never the people's, so it lowers the recall of the verdicts
people gave those items and has no precision of its own worth showing; `per_category` reports the categories asked.

Interval: the Wilson score interval of each share, 95 % (Wilson 1927): with p the share of k in n and z = 1.95996,
(p + z^2/2n -+ z sqrt(p(1 - p)/n + z^2/4n^2)) / (1 + z^2/n). Unlike a bootstrap over items it does not collapse to
one point at 0/n or n/n (10 of 10 gives [0.722, 1.000], not [1, 1]), and it needs no seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["CategoryScore", "Z_95", "per_category", "wilson_interval"]

Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile


def wilson_interval(successes: int, trials: int) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of successes / trials; None for no trials."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"wilson_interval: need 0 <= successes <= trials, got {successes} of {trials}")
    p, z2 = successes / trials, Z_95 ** 2
    centre = p + z2 / (2 * trials)
    spread = Z_95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials ** 2))
    scale = 1 + z2 / trials
    low = 0.0 if successes == 0 else (centre - spread) / scale  # exactly, not a rounding away from 0 and 1
    high = 1.0 if successes == trials else (centre + spread) / scale
    return low, high


@dataclass(frozen=True)
class CategoryScore:
    """One category: `hits` items both rated c, of `judged` the judge rated c and `reference` people rated c."""

    category: str
    hits: int
    judged: int
    reference: int

    @property
    def precision(self) -> float | None:
        return self.hits / self.judged if self.judged else None

    @property
    def recall(self) -> float | None:
        return self.hits / self.reference if self.reference else None

    @property
    def precision_interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.hits, self.judged)

    @property
    def recall_interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.hits, self.reference)

    def precision_text(self) -> str:
        """`0.900 [0.744, 0.965] (27/30)`, or `n/a (0/0)`."""
        return _share_text(self.precision, self.precision_interval, self.hits, self.judged)

    def recall_text(self) -> str:
        return _share_text(self.recall, self.recall_interval, self.hits, self.reference)

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"precision": self.precision, "precision_interval": self.precision_interval,
                               "recall": self.recall, "recall_interval": self.recall_interval}


def _share_text(share: float | None, interval: tuple[float, float] | None, hits: int, total: int) -> str:
    if share is None or interval is None:
        return f"n/a ({hits}/{total})"
    return f"{share:.3f} [{interval[0]:.3f}, {interval[1]:.3f}] ({hits}/{total})"


def per_category(reference: Sequence[str], judged: Sequence[str], categories: Sequence[str]
                 ) -> tuple[CategoryScore, ...]:
    """Precision and recall of `judged` against `reference` (the same items, in the same order) for each of
    `categories`, in that order."""
    if len(reference) != len(judged):
        raise ValueError(f"per_category: {len(reference)} reference verdicts against {len(judged)}; rate the same "
                         "items")
    pairs = list(zip(reference, judged))
    return tuple(CategoryScore(c, sum(r == j == c for r, j in pairs), sum(j == c for j in judged),
                               sum(r == c for r in reference)) for c in categories)
