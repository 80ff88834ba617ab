"""Drafted and hand-written cases, reported apart.

The model that drafted a case (from a page it was shown) may be the model that answers it, so a mean over
drafted cases is not comparable with one over hand-written cases. For the lead to wire into run summaries:
`by_origin(rows, metrics)` gives per origin the mean, scored, not-applicable and errored counts of each metric,
from the rows' `tags` (a case tagged `drafted` is drafted; every other case is hand-written).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

DRAFTED_TAG = "drafted"
ORIGINS = ("hand-written", "drafted")


def origin(tags: Iterable[str]) -> str:
    """`drafted` for a case carrying the drafted tag, else `hand-written`."""
    return ORIGINS[1] if DRAFTED_TAG in tags else ORIGINS[0]


def by_origin(rows: Sequence[dict], metric_names: Iterable[str]) -> dict[str, dict]:
    """{origin: {"rows": n, "metrics": {name: {mean, scored, not_applicable, errored}}}} for the origins
    present in `rows`. Means are over rows where the metric applies and no error occurred, as in summaries."""
    names = list(metric_names)
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(origin(row.get("tags", ())), []).append(row)
    out = {}
    for name in ORIGINS:
        group = groups.get(name)
        if not group:
            continue
        errored = sum(r.get("error") is not None for r in group)
        metrics = {}
        for metric in names:
            values = [r["metrics"].get(metric) for r in group if r.get("error") is None]
            scored = [v for v in values if v is not None]
            metrics[metric] = {"mean": sum(scored) / len(scored) if scored else None, "scored": len(scored),
                               "not_applicable": len(values) - len(scored), "errored": errored}
        out[name] = {"rows": len(group), "metrics": metrics}
    return out
