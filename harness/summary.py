"""Aggregation: a run's summary.json from its rows (per metric means with their counts, claims, repeat stability).

The summary is accumulated one row at a time (`Summarizer`), so a million rows are summarised without holding
them; `summarize` runs it over any iterable of rows. A mean is the sum of the values in row order over their
count, the sum taken as Python's `sum` takes it, a block of `_FOLD` rows at a time (`sum(block, total)`): the
same digits as one `sum` over every value for any run on Python 3.11 and below (which adds in order), and for runs
up to `_FOLD` rows on every version (3.12's `sum` compensates rounding within a call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, NamedTuple, Sequence

from .cases import ORIGINS, origin
from .records import REVIEW_WARNINGS, AnyRow, ClaimCounts, MetricSummary, Row, Summary, review_kinds

if TYPE_CHECKING:
    from .judged.standing import JudgeStanding

__all__ = ["Summarizer", "Tally", "errored_value", "metric_summaries", "metric_values", "per_case_means", "summarize",
           "tally"]

_FOLD = 16_384  # rows whose values are held before they are added to the running sums


def summarize(rows: Iterable[AnyRow], metric_names: Iterable[str], collection: dict, *,
              na_as_pass: bool = False, stability: bool = True, judged: JudgeStanding | None = None) -> Summary:
    """Per metric: the mean over rows where it applies, with counts of scored, not applicable and errored rows
    (with `na_as_pass`, not-applicable values count as 1.0 in the mean, as the tutorial tables do).
    Retrieval metrics sit beside the collection size, since Recall@4 over four chunks says nothing. When a judge
    rated the answers, `judge` holds its agreement with people (`harness/judged/`); when the run asked for
    --judged-passed, `judged_passed` says whether the judge earned it (`JudgeStanding`) and so whose `passed` this
    is. One pass over `rows`; `stability=False` leaves out the repeat stability (see `Summarizer`)."""
    summarizer = Summarizer(metric_names, na_as_pass=na_as_pass, stability=stability)
    for row in rows:
        summarizer.add(row)
    return summarizer.summary(collection, judged=judged)


def metric_summaries(rows: Iterable[AnyRow], metric_names: Sequence[str], *,
                     na_as_pass: bool = False) -> dict[str, MetricSummary]:
    """Each metric's mean over the unerrored rows where it applies, with its counts: a summary's `metrics` alone
    (the same sums), for views that show only those (the report's breakdown by tag and document)."""
    means = _Means(list(dict.fromkeys(metric_names)))
    for row in rows:
        means.add(row)
    return means.summaries(na_as_pass=na_as_pass)


class Tally(NamedTuple):
    """What a summary takes of one row: plain data, so that rows scored in another process are summed here in
    their order, as the rows themselves would be. `values` follow the summarizer's metric names (None: an errored
    row); `claims` are the count keys of the row's claims; `warnings` the reviewer-warning kinds it carries."""

    case_id: str
    repeat: int
    origin: str
    values: tuple[float | None, ...] | None
    passed: bool
    pending: bool
    status: str
    claims: tuple[str, ...]
    warnings: tuple[str, ...] = ()


def tally(row: AnyRow, names: Sequence[str]) -> Tally:
    claims = tuple("in_disagreement" if c.status == "disagreement" else c.status for c in row.claims) \
        if row.error is None and row.claims else ()
    return Tally(row.case_id, row.repeat, origin(row.tags), None if row.error is not None else _values(row, names),
                 row.metrics.get("passed") == 1.0, row.human_claim_review != "reviewed", row.answer.status, claims,
                 review_kinds(row.warnings) if row.warnings else ())


def _values(row: AnyRow, names: Sequence[str]) -> tuple[float | None, ...]:
    get = row.metrics.get
    return tuple(get(name) for name in names)


class _Means:
    """Per metric: the sum and count of the values of the unerrored rows where it applies, and the errored rows."""

    def __init__(self, names: Sequence[str]):
        self.names = names
        self.totals = [0.0] * len(names)
        self.counts = [0] * len(names)
        self._held: list[list[float]] = [[] for _ in names]
        self._held_rows = 0
        self.unerrored = self.errored = 0

    def add(self, row: AnyRow) -> None:
        self.add_values(None if row.error is not None else _values(row, self.names))

    def add_values(self, values: Sequence[float | None] | None) -> None:
        """One row's values in `names` order; None for an errored row."""
        if values is None:
            self.errored += 1
            return
        self.unerrored += 1
        for held, value in zip(self._held, values):
            if value is not None:
                held.append(value)
        self._held_rows += 1
        if self._held_rows == _FOLD:
            self._fold()

    def copy(self) -> _Means:
        twin = _Means(self.names)
        twin.totals, twin.counts, twin._held = list(self.totals), list(self.counts), [list(h) for h in self._held]
        twin._held_rows, twin.unerrored, twin.errored = self._held_rows, self.unerrored, self.errored
        return twin

    def _fold(self) -> None:
        for i, held in enumerate(self._held):
            self.totals[i] = sum(held, self.totals[i]) if self.counts[i] else sum(held)
            self.counts[i] += len(held)
            held.clear()
        self._held_rows = 0

    def summaries(self, *, na_as_pass: bool) -> dict[str, MetricSummary]:
        self._fold()
        out = {}
        for name, total, scored in zip(self.names, self.totals, self.counts):
            count = scored
            if na_as_pass:
                total, count = total + self.unerrored - scored, self.unerrored
            out[name] = MetricSummary(mean=total / count if count else None, scored=scored,
                                      not_applicable=self.unerrored - scored, errored=self.errored)
        return out


class Summarizer:
    """A run's summary, accumulated one row at a time in any order; `summary()` gives the `Summary`.

    What it keeps is bounded by the metrics and origins, not by the rows, except for two things a summary needs
    per case or per answer: with `stability` (the default) each case's verdicts, to count cases whose repeats
    disagree (`repeat_stability`); and the rows a judge rated (only those), for the judge's agreement with people.
    `stability=False` keeps nothing per case and leaves `repeat_stability` out: for rows that never repeat a
    case (saved outputs) or a view that does not show it (the report)."""

    def __init__(self, metric_names: Iterable[str], *, na_as_pass: bool = False, stability: bool = True):
        self.names = list(dict.fromkeys(metric_names))
        self.na_as_pass, self.stability = na_as_pass, stability
        self._all = _Means(self.names)
        self._origin: str | None = None  # while every row so far has one origin, the run's means are its means
        self._by_origin: dict[str, _Means] | None = None
        self._rows = self._passes = self._pending = 0
        self._statuses: dict[str, int] = {}
        self._claims = {"agreed": 0, "in_disagreement": 0, "resolved": 0, "one_reviewer": 0}
        self._warnings = dict.fromkeys(REVIEW_WARNINGS, 0)
        self._judged: list[AnyRow] = []
        self._verdicts: dict[str, list[tuple]] = {}
        self._repeated = False

    def add(self, row: AnyRow) -> None:
        self.add_tally(tally(row, self.names))
        if row.judged_claims is not None:
            self._judged.append(row)

    def add_tally(self, t: Tally) -> None:
        """One row, by what a summary takes of it (`tally`; a row a judge rated goes through `add`)."""
        self._rows += 1
        kind = t.origin
        if self._by_origin is None and kind != self._origin:
            if self._origin is None:
                self._origin = kind
            else:  # a second origin: the first one's means so far are the run's, value for value
                self._by_origin = {self._origin: self._all.copy()}
        if self._by_origin is not None:
            means = self._by_origin.get(kind)
            if means is None:
                means = self._by_origin[kind] = _Means(self.names)
            means.add_values(t.values)
        self._all.add_values(t.values)
        self._passes += t.passed
        self._pending += t.pending
        self._statuses[t.status] = self._statuses.get(t.status, 0) + 1
        for claim in t.claims:
            self._claims[claim] += 1
        for kind in t.warnings:
            self._warnings[kind] += 1
        if self.stability:
            self._repeated = self._repeated or t.repeat > 0
            # An error and "not applicable" are verdicts too: answered once and abstained once is a flip.
            verdict = ("error",) * len(self.names) if t.values is None else t.values
            self._verdicts.setdefault(t.case_id, []).append(verdict)

    def summary(self, collection: dict, *, judged: JudgeStanding | None = None) -> Summary:
        metrics = self._all.summaries(na_as_pass=self.na_as_pass)
        by_origin = ({o: self._by_origin[o].summaries(na_as_pass=self.na_as_pass) for o in ORIGINS
                      if o in self._by_origin} if self._by_origin is not None else None)
        judge = None
        if self._judged:  # the statistics of agreement (and numpy) only for rows a judge rated
            from .judged.standing import judge_agreement

            judge = judge_agreement(self._judged)
        return Summary(rows=self._rows, errored=self._all.errored, passes=self._passes, metrics=metrics,
                       answer_statuses=dict(self._statuses), collection=collection, na_as_pass=self.na_as_pass,
                       human_claim_review={"pending": self._pending, "reviewed": self._rows - self._pending},
                       claims=ClaimCounts(**self._claims),
                       repeat_stability=self._stability() if self._repeated else None,
                       by_origin=by_origin, judge=judge.summary_json() if judge is not None else None,
                       judged_passed=judged.to_json() if judged is not None else None,
                       warnings=dict(self._warnings))

    def _stability(self) -> dict:
        """Per metric, over cases answered more than once: how many cases got differing verdicts across repeats.
        A CI gate can then tell a regression from the noise of the model itself."""
        groups = [g for g in self._verdicts.values() if len(g) > 1]
        out = {}
        for i, name in enumerate(self.names):
            seen = [values for values in ({v[i] for v in group} for group in groups) if values != {None}]
            flipped = sum(1 for values in seen if len(values) > 1)
            out[name] = {"cases": len(seen), "flipped": flipped, "flip_rate": flipped / len(seen) if seen else None}
        return out


def metric_values(rows: Sequence[Row], name: str, *, na_as_pass: bool = False) -> list[float]:
    """The values a metric's mean is taken over: the unerrored rows where it applies (with `na_as_pass`, every
    unerrored row, not-applicable counting 1.0)."""
    values = [r.metrics.get(name) for r in rows if not r.errored]
    return [1.0 if v is None else v for v in values] if na_as_pass else [v for v in values if v is not None]


def errored_value(row: Row, name: str, *, primary: bool) -> float | None:
    """The value compare and the sweep use for `name` on `row`: an errored row counts 0 on the primary metric
    (errors never make a run look better) and has no value on the others."""
    if row.errored:
        return 0.0 if primary else None
    value = row.metrics.get(name)
    return None if value is None else float(value)


def per_case_means(values: Iterable[tuple[str, float | None]]) -> dict[str, float | None]:
    """(case id, value) pairs, one per row, to one value per case: the mean of the case's non-null values over
    its repeats, or None when every repeat is null. Cases keep the order of their first row."""
    sums: dict[str, list[float]] = {}
    for case_id, value in values:
        sums.setdefault(case_id, [])
        if value is not None:
            sums[case_id].append(float(value))
    return {case_id: (sum(v) / len(v) if v else None) for case_id, v in sums.items()}
