"""Aggregation: a run's summary.json from its rows (per metric means with their counts, claims, repeat stability)."""

from __future__ import annotations

from typing import Iterable, Sequence

from .cases import ORIGINS, origin
from .judged import JudgeStanding, judge_agreement
from .records import ClaimCounts, MetricSummary, Row, Summary


def summarize(rows: Sequence[Row], metric_names: Iterable[str], collection: dict, *,
              na_as_pass: bool = False, judged: JudgeStanding | None = None) -> Summary:
    """Per metric: the mean over rows where it applies, with counts of scored, not applicable and errored rows
    (with `na_as_pass`, not-applicable values count as 1.0 in the mean, as the tutorial tables do).
    Retrieval metrics sit beside the collection size, since Recall@4 over four chunks says nothing. When a judge
    rated the answers, `judge` holds its agreement with people (`harness/judged.py`); when the run asked for
    --judged-passed, `judged_passed` says whether the judge earned it (`JudgeStanding`) and so whose `passed` this
    is."""
    names = list(metric_names)
    judge = judge_agreement(rows)
    errored = sum(1 for r in rows if r.errored)
    out = metric_summaries(rows, names, na_as_pass=na_as_pass)
    origins = {origin(r.tags) for r in rows}
    by_origin = ({o: metric_summaries([r for r in rows if origin(r.tags) == o], names, na_as_pass=na_as_pass)
                  for o in ORIGINS if o in origins} if len(origins) > 1 else None)
    pending = sum(1 for r in rows if r.human_claim_review != "reviewed")
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r.answer.status] = statuses.get(r.answer.status, 0) + 1
    return Summary(rows=len(rows), errored=errored, passes=sum(1 for r in rows if r.metrics.get("passed") == 1.0),
                   metrics=out, answer_statuses=statuses, collection=collection, na_as_pass=na_as_pass,
                   human_claim_review={"pending": pending, "reviewed": len(rows) - pending},
                   claims=claim_counts(rows),
                   repeat_stability=repeat_stability(rows, out) if any(r.repeat > 0 for r in rows) else None,
                   by_origin=by_origin, judge=judge.summary_json() if judge is not None else None,
                   judged_passed=judged.to_json() if judged is not None else None)


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


def metric_summaries(rows: Sequence[Row], names: Iterable[str], *,
                     na_as_pass: bool = False) -> dict[str, MetricSummary]:
    """Each metric's mean over the unerrored rows where it applies, with its counts."""
    errored = sum(1 for r in rows if r.errored)
    unerrored = len(rows) - errored
    out = {}
    for name in names:
        scored = metric_values(rows, name)
        total, count = sum(scored), len(scored)
        if na_as_pass:
            total, count = total + unerrored - len(scored), unerrored
        out[name] = MetricSummary(mean=total / count if count else None, scored=len(scored),
                                  not_applicable=unerrored - len(scored), errored=errored)
    return out


def claim_counts(rows: Sequence[Row]) -> ClaimCounts:
    """Reviewed claims of the rows without an error, by status (a disagreement is pending until resolved)."""
    counts = {"agreed": 0, "in_disagreement": 0, "resolved": 0, "one_reviewer": 0}
    for row in (r for r in rows if not r.errored):
        for claim in row.claims or ():
            counts["in_disagreement" if claim.status == "disagreement" else claim.status] += 1
    return ClaimCounts(**counts)


def repeat_stability(rows: Sequence[Row], metric_names: Iterable[str]) -> dict:
    """Per metric, over cases answered more than once: how many cases got differing verdicts across repeats.
    A CI gate can then tell a regression from the noise of the model itself."""
    by_case: dict[str, list[Row]] = {}
    for r in rows:
        by_case.setdefault(r.case_id, []).append(r)
    out = {}
    for name in metric_names:
        # An error and "not applicable" are verdicts too: answered once and abstained once is a flip.
        seen = [{"error" if r.errored else r.metrics.get(name) for r in group}
                for group in by_case.values() if len(group) > 1]
        seen = [values for values in seen if values != {None}]
        flipped = sum(1 for values in seen if len(values) > 1)
        out[name] = {"cases": len(seen), "flipped": flipped, "flip_rate": flipped / len(seen) if seen else None}
    return out
