"""The sweep leaderboard: every cell against the baseline on the same cases, corrected for comparing many.

Definitions (per cell c, compared with the baseline b on the primary metric):
- Paired cases: cases where the metric is non-null in both b and c (a case answered several times contributes
  the mean of its repeats; the caller passes one value per case). `n` counts them. An errored case counts 0 on
  the primary metric (`harness.summary.errored_value`, the rule `rag-eval compare` uses too); `errored`
  counts a cell's errored cases among those it is ranked on.
- mean, baseline_mean, delta, the 95 % interval of the delta (`ci_method`: Tango's score interval for 0/1 metrics,
  the scaled score interval otherwise, `harness/stats/score_interval.py`) and the two-sided sign-flip p-value
  (`p_method`: exact binomial, exact or Monte-Carlo) come from `harness.stats.paired.paired_stats`, exactly as `rag-eval
  compare` computes them, with the same seed.
- mean_ci_low/high: the 95 % bootstrap interval of the cell's own mean over its paired cases
  (`harness.stats.paired.mean_interval`, the same draws), drawn on the chart.
- p_holm: Holm's step-down adjustment of the p-values across all compared cells (the baseline is not compared
  with itself). The verdict is `better` or `worse` (by the sign of the delta, in the metric's direction) when
  p_holm <= alpha, else `indistinguishable`; `no shared cases` when n == 0. This bounds the chance of calling
  any equal cell different at alpha; the intervals are per cell and not adjusted.
- Latency and tokens are per case over all the cell's cases: median and 90th percentile (numpy's linear
  interpolation) of the latency in ms, mean and total of prompt + output tokens.
- Pareto front: cells that no other cell beats on both the metric mean (higher, in its direction) and the median
  latency (lower) with at least one strictly.
Entries are ranked by delta in the metric's direction (the baseline at 0), ties kept in sweep order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..errors import InputError
from ..stats.defaults import DEFAULT_RESAMPLES, DEFAULT_SEED
from ..stats.paired import holm, mean_interval, paired_stats

__all__ = ["CellResults", "Entry", "Leaderboard", "CellSelection", "build_leaderboard", "pareto_front",
           "select_and_confirm"]

BETTER, WORSE, SAME, BASELINE, UNPAIRED = "better", "worse", "indistinguishable", "baseline", "no shared cases"


@dataclass(frozen=True)
class CellResults:
    """One cell's per-case numbers, keyed by case id: the primary metric (None = not applicable), the latency
    of answering the case in ms, and its prompt + output tokens (None when the answerer reports none); `errored`
    the ids of cases with an errored row (their value is already 0)."""

    label: str
    values: Mapping[str, float | None]
    latency_ms: Mapping[str, float | None] = field(default_factory=dict)
    tokens: Mapping[str, float | None] = field(default_factory=dict)
    errored: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Entry:
    """One row of the leaderboard (see the module docstring for each number's definition)."""

    label: str
    is_baseline: bool
    n: int
    mean: float | None
    mean_ci_low: float | None
    mean_ci_high: float | None
    baseline_mean: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_holm: float | None
    verdict: str
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    tokens_mean: float | None
    tokens_total: float | None
    pareto: bool = False
    errored: int = 0  # the cell's errored cases among those it is ranked on (each counted 0 on the primary metric)
    judge: str | None = None  # when the primary metric reads judged verdicts: the judge's agreement with people
    p_method: str | None = None  # how p was computed (harness.stats.paired): exact-binomial, exact or monte-carlo
    ci_method: str | None = None  # the delta's interval: Tango score (0/1 metrics) or scaled score


@dataclass(frozen=True)
class Leaderboard:
    """All cells against `baseline` on the primary metric; `tag` names the case subset when one was chosen."""

    primary: str
    higher_is_better: bool
    alpha: float
    baseline: str
    tag: str | None
    cases: int  # cases with a value of the primary metric in the baseline
    seed: int
    resamples: int
    entries: tuple[Entry, ...]

    def entry(self, label: str) -> Entry:
        return next(e for e in self.entries if e.label == label)

    def to_dict(self) -> dict:
        return asdict(self) | {"entries": [asdict(e) for e in self.entries]}


def pareto_front(points: Sequence[tuple[float | None, float | None]]) -> list[bool]:
    """For (score to maximise, cost to minimise) pairs: True where no other point is at least as good on both
    and strictly better on one. A point with a None is never on the front; equal points are both on it."""
    def dominated(i: int, s: float, c: float) -> bool:
        return any(t is not None and d is not None and t >= s and d <= c and (t > s or d < c)
                   for j, (t, d) in enumerate(points) if j != i)

    return [s is not None and c is not None and not dominated(i, s, c) for i, (s, c) in enumerate(points)]


def build_leaderboard(baseline: CellResults, cells: Sequence[CellResults], *, primary: str, alpha: float = 0.05,
                      higher_is_better: bool = True, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                      tag: str | None = None, cases: Collection[str] | None = None) -> Leaderboard:
    """Compare every cell (the baseline may be among `cells`; it is listed once) with the baseline. `cases`
    keeps only those case ids (a tag's cases); `tag` only names that subset in the output."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha}")
    _check_inputs([baseline, *cells])
    keep = None if cases is None else set(cases)
    base = _restricted(baseline, keep)
    others = [_restricted(c, keep) for c in cells if c.label != baseline.label]
    stats = [_paired(base, c, seed, resamples) for c in others]
    adjusted = holm([s.p_value for s in stats])
    sign = 1.0 if higher_is_better else -1.0
    entries = [_baseline_entry(base, seed, resamples)]
    entries += [replace(s, p_holm=p_holm, verdict=_verdict(s, p_holm, alpha, sign))
                for s, p_holm in zip(stats, adjusted)]
    front = pareto_front([(None if e.mean is None else sign * e.mean,
                           e.latency_p50_ms) for e in entries])
    entries = [replace(e, pareto=on) for e, on in zip(entries, front)]
    order = sorted(range(len(entries)), key=lambda i: (entries[i].delta is None, -sign * (entries[i].delta or 0.0), i))
    return Leaderboard(primary, higher_is_better, float(alpha), baseline.label, tag,
                       sum(1 for v in base.values.values() if v is not None), seed, resamples,
                       tuple(entries[i] for i in order))


def _check_inputs(cells: Sequence[CellResults]) -> None:
    """Refuse what would make a number meaningless: two different cells with one label, a non-finite value."""
    seen: dict[str, CellResults] = {}
    for cell in cells:
        if seen.setdefault(cell.label, cell) != cell:
            raise InputError(f"two cells are labelled {cell.label!r}; labels must be unique")
        for what, values in (("value", cell.values), ("latency", cell.latency_ms), ("tokens", cell.tokens)):
            bad = next((k for k, v in values.items() if v is not None and not np.isfinite(v)), None)
            if bad is not None:
                raise InputError(f"cell {cell.label!r}, case {bad!r}: the {what} {values[bad]!r} is not a finite "
                                 "number")


def _restricted(cell: CellResults, keep: set[str] | None) -> CellResults:
    if keep is None:
        return cell
    return CellResults(cell.label, {k: v for k, v in cell.values.items() if k in keep},
                       {k: v for k, v in cell.latency_ms.items() if k in keep},
                       {k: v for k, v in cell.tokens.items() if k in keep}, cell.errored & keep)


def _paired(base: CellResults, cell: CellResults, seed: int, resamples: int) -> Entry:
    """The cell's entry against the baseline on their paired cases, before Holm's adjustment (verdict unpaired;
    all None but n when there are none)."""
    pairs = [(va, vb) for k, va in base.values.items() if va is not None and (vb := cell.values.get(k)) is not None]
    a = np.array([float(va) for va, _ in pairs])
    b = np.array([float(vb) for _, vb in pairs])
    s = paired_stats(a, b, seed=seed, resamples=resamples)
    own_low, own_high = _own_interval(b, seed, resamples)
    return Entry(cell.label, False, len(pairs), s.mean_b, own_low, own_high, s.mean_a, s.delta, s.ci_low, s.ci_high,
                 s.p_value, None, UNPAIRED, *_costs(cell), errored=len(cell.errored & set(cell.values)),
                 p_method=s.p_method, ci_method=s.ci_method)


def _baseline_entry(base: CellResults, seed: int, resamples: int) -> Entry:
    values = np.array([float(v) for v in base.values.values() if v is not None])
    mean = float(values.mean()) if len(values) else None
    own_low, own_high = _own_interval(values, seed, resamples)
    return Entry(base.label, True, len(values), mean, own_low, own_high, mean, None if mean is None else 0.0,
                 None, None, None, None, BASELINE, *_costs(base), errored=len(base.errored & set(base.values)))


def _own_interval(values: np.ndarray, seed: int, resamples: int) -> tuple[float | None, float | None]:
    """The interval of a cell's own mean, drawn on the chart; (None, None) with no cases."""
    return mean_interval(values, seed=seed, resamples=resamples) or (None, None)


def _verdict(s: Entry, p_holm: float | None, alpha: float, sign: float) -> str:
    # delta is None exactly when n == 0 (paired_stats on no cases); testing it too lets the sign test below see a float
    if s.n == 0 or p_holm is None or s.delta is None:
        return UNPAIRED
    if p_holm > alpha or s.delta == 0:
        return SAME
    return BETTER if sign * s.delta > 0 else WORSE


def _costs(cell: CellResults) -> tuple[float | None, float | None, float | None, float | None]:
    latency = np.array([float(v) for v in cell.latency_ms.values() if v is not None])
    tokens = np.array([float(v) for v in cell.tokens.values() if v is not None])
    p50, p90 = (float(x) for x in np.percentile(latency, [50, 90])) if latency.size else (None, None)
    return p50, p90, *((float(tokens.mean()), float(tokens.sum())) if tokens.size else (None, None))


@dataclass(frozen=True)
class CellSelection:
    """Choose on one tag, confirm on another: `select` ranks every cell on the select-on cases; the best cell
    (largest delta in the metric's direction; ties: lower median latency, then sweep order) is compared with
    the baseline alone on the confirm-on cases in `confirm` (one comparison, so p_holm equals the p-value).
    The baseline is a candidate too: when no cell's delta beats it (is above 0, in the metric's direction),
    `selected` is the baseline and nothing is confirmed (`confirm` is None). `selected` is None when no cell
    shares a case with the baseline on the select-on cases."""

    select_on: str
    confirm_on: str
    selected: str | None
    select: Leaderboard
    confirm: Leaderboard | None

    def to_dict(self) -> dict:
        return {"select_on": self.select_on, "confirm_on": self.confirm_on, "selected": self.selected,
                "select": self.select.to_dict(), "confirm": self.confirm.to_dict() if self.confirm else None}

    @property
    def baseline_kept(self) -> bool:
        """No cell beat the baseline on the select-on cases: the baseline stays and nothing was confirmed."""
        return self.selected is not None and self.selected == self.select.baseline


def select_and_confirm(baseline: CellResults, cells: Sequence[CellResults], case_tags: Mapping[str, Collection[str]],
                       *, select_on: str, confirm_on: str, primary: str, alpha: float = 0.05,
                       higher_is_better: bool = True, seed: int = DEFAULT_SEED,
                       resamples: int = DEFAULT_RESAMPLES) -> CellSelection:
    """Pick the best cell on the `select_on` cases and re-evaluate it against the baseline on `confirm_on`.
    A case carrying both tags is refused: choosing and confirming on the same case confirms nothing."""
    chosen = {c for c, tags in case_tags.items() if select_on in tags}
    held = {c for c, tags in case_tags.items() if confirm_on in tags}
    both = sorted(chosen & held)
    if both:
        raise InputError(f"{len(both)} case(s) carry both {select_on!r} and {confirm_on!r} ({', '.join(both[:5])}"
                         f"{', ...' if len(both) > 5 else ''}); a case may be used to select or to confirm, not both")
    for tag, ids in ((select_on, chosen), (confirm_on, held)):
        if not ids:
            raise InputError(f"no case carries the tag {tag!r}; tag some cases {tag!r} in the cases file")
    def board(compared: Sequence[CellResults], tag: str, cases: Collection[str]) -> Leaderboard:
        return build_leaderboard(baseline, compared, primary=primary, alpha=alpha, higher_is_better=higher_is_better,
                                 seed=seed, resamples=resamples, tag=tag, cases=cases)

    select = board(cells, select_on, chosen)
    sign = 1.0 if higher_is_better else -1.0
    # a compared cell with shared cases (n > 0) always has a delta; keeping it beside its entry types it as float
    candidates = [(delta, e) for e in select.entries
                  if not e.is_baseline and e.n > 0 and (delta := e.delta) is not None]
    if not candidates:
        return CellSelection(select_on, confirm_on, None, select, None)
    order = {c.label: i for i, c in enumerate(cells)}
    best_delta, best = min(candidates, key=lambda de: (-sign * de[0], _or_inf(de[1].latency_p50_ms),
                                                       order.get(de[1].label, 0)))
    if sign * best_delta <= 0:  # the baseline is a candidate: a cell that does not beat it is not chosen
        return CellSelection(select_on, confirm_on, baseline.label, select, None)
    winner = next(c for c in cells if c.label == best.label)
    confirm = board([winner], confirm_on, held)
    return CellSelection(select_on, confirm_on, best.label, select, confirm)


def _or_inf(value: float | None) -> float:
    return float("inf") if value is None else value
