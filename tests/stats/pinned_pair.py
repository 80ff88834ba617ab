"""A fixed pair of hand-made runs that exercises every method compare has: 0/1 metrics with many discordant cases
(exact binomial p, Tango's interval, exact MDE), a metric of few distinct unequal differences among many cases
(Monte-Carlo p, scaled score interval, simulated MDE), one with 16 or fewer differing cases (exact p),
repeats averaged per case, an errored row and a metric missing on some cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.records import Manifest
from harness.runs import LoadedRun
from tests.support.rowkit import make_row

METRICS = ("hit@1", "rr", "facts", "passed")


def pinned_pair(cases: int = 300) -> tuple[LoadedRun, LoadedRun]:
    """Runs A and B over `cases` cases (seeded, so the same every time); case c7 has two repeats."""
    rng = np.random.default_rng(31)
    rows: dict[str, list] = {"A": [], "B": []}
    for i in range(cases):
        hits = rng.random(2) < (0.55, 0.65)
        ranks = rng.integers(1, 5, size=2)
        facts = (0.5, 0.5 + (0.25 if i % 37 == 0 else 0.0) - (0.5 if i % 53 == 1 else 0.0))
        for side, j in (("A", 0), ("B", 1)):
            values = {"hit@1": float(hits[j]), "rr": 1.0 / int(ranks[j]), "facts": facts[j] if i % 11 else None,
                      "passed": float(hits[j] and ranks[j] <= 2)}
            error = "timeout" if (side, i) == ("B", 5) else None
            repeats = 2 if i == 7 else 1
            for repeat in range(repeats):
                shifted = dict(values, rr=values["rr"] / (1 + repeat)) if repeat else values
                rows[side].append(make_row(f"c{i}", shifted, repeat=repeat, error=error))
    return tuple(LoadedRun(side, Path(side), tuple(rows[side]), Manifest(run_id=side, metrics=list(METRICS)))
                 for side in ("A", "B"))  # type: ignore[return-value]
