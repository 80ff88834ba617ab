"""A run's rows as columns, what compare reads of them: keys, errors, review states, tags and one array per metric,
built one row at a time, so that two runs of a million rows are held as numbers, not records.

From a run directory the rows are streamed (`harness.runs.read_scores`: only the fields compare uses are built
into records); from a run already in memory (`LoadedRun`) its rows are read the same way. A row a judge rated is
kept whole: the judge's agreement with people needs its claims. It is measured over those rows, which is what it
was over every row (the others add no claim), except where a repeat without judged claims came before one with
the same answer that has them: over every row that answer was skipped, seen already; here it counts.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..metrics.registry import passed_of
from ..records import Manifest, Row, RowScores
from ..runs import LoadedRun, read_scores

__all__ = ["Key", "RunColumns", "columns_of_dir", "columns_of_run"]

Key = tuple[str, int]  # (case_id, repeat)


@dataclass(frozen=True)
class RunColumns:
    """One run, row by row in its rows' order. `values[name][i]` is row i's value of metric `name`, NaN where the
    row has none (null, or no such key): rows never hold NaN themselves (`RowScores` refuses it). `passed` is
    recomputed from each row's metrics when the builder was asked to (`judged` True or False), as
    `harness.judged.standing.passed_from` does."""

    name: str
    path: Path
    manifest: Manifest
    notes: tuple[str, ...]
    keys: tuple[Key, ...]
    errored: np.ndarray  # bool per row
    reviewed: np.ndarray  # bool per row: human_claim_review == "reviewed"
    tags: tuple[tuple[str, ...], ...]
    values: dict[str, np.ndarray]
    judged_rows: tuple[Row, ...]  # the rows that carry judged claims, whole, in row order

    def errored_values(self, name: str, *, primary: bool) -> np.ndarray:
        """`harness.summary.errored_value` for every row: an errored row counts 0 on the primary metric and has
        no value (NaN) on the others."""
        return np.where(self.errored, 0.0 if primary else np.nan, self.values[name])


class _Builder:
    def __init__(self, metrics: Sequence[str], passed_judged: bool | None):
        self.metrics, self.passed_judged = tuple(metrics), passed_judged
        self.keys: list[Key] = []
        self.errored, self.reviewed = array("b"), array("b")
        self.tags: list[tuple[str, ...]] = []
        self.known_tags: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.values = {name: array("d") for name in self.metrics}
        self.judged: list[Row] = []

    def add(self, scores: RowScores | Row, whole: Row | None) -> None:
        self.keys.append((scores.case_id, scores.repeat))
        self.errored.append(scores.error is not None)
        self.reviewed.append(scores.human_claim_review == "reviewed")
        self.tags.append(self.known_tags.setdefault(scores.tags, scores.tags))
        metrics = scores.metrics
        if self.passed_judged is not None and scores.error is None:
            metrics = metrics | {"passed": passed_of(metrics, judged=self.passed_judged)}
        for name, column in self.values.items():
            value = metrics.get(name)
            column.append(np.nan if value is None else float(value))
        if whole is not None:
            self.judged.append(whole)

    def build(self, name: str, path: Path, manifest: Manifest, notes: tuple[str, ...]) -> RunColumns:
        return RunColumns(name, path, manifest, notes, tuple(self.keys), np.frombuffer(self.errored, dtype=np.int8)
                          .astype(bool), np.frombuffer(self.reviewed, dtype=np.int8).astype(bool), tuple(self.tags),
                          {k: np.frombuffer(v, dtype=float) for k, v in self.values.items()}, tuple(self.judged))


def columns_of_dir(path: str | Path, manifest: Manifest, notes: tuple[str, ...], metrics: Sequence[str], *,
                   passed_judged: bool | None = None) -> RunColumns:
    """The columns of the run directory at `path` (its manifest already read: `read_manifest_noting`), for these
    metrics, streaming its rows. `passed_judged`: recompute `passed` from claim_support_judged (True) or the
    people's claim_support (False); None keeps the stored value."""
    path = Path(path)
    return _build(read_scores(path), metrics, passed_judged).build(path.name, path, manifest, notes)


def columns_of_run(run: LoadedRun, metrics: Sequence[str], *, passed_judged: bool | None = None) -> RunColumns:
    """The columns of a run already in memory (as `columns_of_dir`)."""
    pairs = ((row, row if row.judged_claims is not None else None) for row in run.rows)
    return _build(pairs, metrics, passed_judged).build(run.name, run.path, run.manifest, run.notes)


def _build(pairs: Iterable[tuple[RowScores | Row, Row | None]], metrics: Sequence[str],
           passed_judged: bool | None) -> _Builder:
    builder = _Builder(metrics, passed_judged)
    for scores, whole in pairs:
        builder.add(scores, whole)
    return builder
