"""Paired comparison of two runs over the same cases: per-metric statistics, flips, and the manifest diff.

Definitions (B is compared with A; which way is better is the registry's `higher_is_better`):
- A metric is paired on a case when it is non-null in both runs. Means, delta and the tests use paired cases
  only, so `delta == mean_b - mean_a` exactly. A case answered several times (`repeat`) contributes the mean of
  its repeats, so the unit of resampling is always the case.
- Interval, 95 %: a score interval of the mean per-case difference d = b - a that lets the number of differing
  cases vary (`harness/stats/score_interval.py`): Tango's for 0/1 metrics (`ci_method` `Tango score`), the same
  with wins and losses counted in units of the differing cases' size for the others (`scaled score`). Computed,
  not drawn: no seed.
- p-value: paired randomisation (sign-flip) test, two-sided, over the cases that differ (a tie counts for nothing):
  exact two-sided binomial when every differing case differs by the same amount (0/1 metrics), exact over every
  sign vector when 16 or fewer cases differ, Monte-Carlo sign flips above; `p_method` (`exact-binomial`, `exact`,
  `monte-carlo`) says which, per metric (`harness/stats/paired.py`).
- Errored cases (one rule, shared with the sweep leaderboard): an errored row counts 0 on the primary metric
  (default `passed`), so errors never make a run look better; on every other metric it has no value and is left
  out, as in summaries. `errored` counts the errored compared cases of each run.
- `passed` is read the same way in both runs: the people's, also in a run that recorded --judged-passed; with
  `judged` (--judged-passed), the judge's in both, once each run's judge has earned it and one judge (name and
  prompt) judged both (`harness.judged.standing.judge_refusal`), else JudgeRefused and no comparison.
- The p-values are per metric and not corrected across metrics; the primary metric is the one to decide on.
- notes, per metric: where its interval and p tell different stories at 0.05 (`harness.stats.paired.disagreement`),
  the same words in the text table, Markdown and --json.
- win / tie / loss: cases where B is better / equal / worse than A. The cases behind wins are `fixed` (for a
  0/1 metric: 0 in A, 1 in B), those behind losses `broke`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..cases import refuse_other_selections
from ..errors import InputError
from ..judged.standing import judge_agreement, judge_prompt_sha256, judge_refusal, judge_standing
from ..metrics.registry import higher_is_better
from ..records import Manifest
from ..runs import LoadedRun, read_manifest_noting
from ..stats.defaults import DEFAULT_MIN_JUDGE_KAPPA, DEFAULT_PRIMARY, DEFAULT_RESAMPLES, DEFAULT_SEED, GATE_ALPHA
from ..stats.mde import minimum_detectable_difference
from ..stats.paired import at_floor, disagreement, holm, paired_stats
from .columns import Key, RunColumns, columns_of_dir, columns_of_run
from .settings_diff import manifest_diff

__all__ = ["Comparison", "MetricComparison", "compare_rows", "compare_runs", "manifest_diff", "worse_on"]

_EPS = 1e-12



@dataclass(frozen=True)
class MetricComparison:
    """One metric over the paired cases. Values are None when no case is paired (n == 0)."""

    metric: str
    n: int  # cases where the metric applies in both runs
    unpaired: int  # cases in both runs where it applies in one run only
    mean_a: float | None
    mean_b: float | None
    delta: float | None  # mean_b - mean_a
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    wins: int
    ties: int
    losses: int
    fixed: tuple[str, ...]
    broke: tuple[str, ...]
    mde: float | None = None  # smallest difference these cases can detect (80% power, alpha 0.05; harness.stats.mde)
    mde_status: str | None = None  # harness.stats.mde: ok, not detectable with these cases, no case differs, ...
    p_method: str | None = None  # exact-binomial, exact (every sign vector) or monte-carlo (random sign vectors)
    differing: int = 0  # D: cases whose values differ (the only ones the sign-flip test sees)
    ci_method: str | None = None  # Tango score (0/1 differences) or scaled score (harness.stats.score_interval)
    mde_method: str | None = None  # harness.stats.mde: exact sign test (0/1), sign-flip, exact or simulated
    notes: tuple[str, ...] = ()  # what a reader must know to read this row (interval and p disagreeing)

    def p_at_floor(self, resamples: int) -> bool:
        """A Monte-Carlo p at its floor 1 / (1 + resamples): no random sign vector was as extreme."""
        return at_floor(self.p_value, self.p_method, resamples)

    def to_dict(self) -> dict:
        return asdict(self) | {"fixed": list(self.fixed), "broke": list(self.broke), "notes": list(self.notes)}


@dataclass(frozen=True)
class Comparison:
    """Everything `rag-eval compare` shows. `manifest_diff` items are (dotted key, value in A, value in B);
    keys starting with `code.` are the code that ran, not its settings."""

    run_a: str
    run_b: str
    cases: int
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    tag: str | None
    seed: int
    resamples: int
    confidence: float
    metrics: tuple[MetricComparison, ...]
    metrics_not_shared: tuple[str, ...]
    manifest_diff: tuple[tuple[str, Any, Any], ...]
    review: dict  # {"a": {"pending": n, "reviewed": n}, "b": {...}} over the compared rows
    primary: str | None = None  # the metric to decide on; None when the runs do not both have it
    errored: dict | None = None  # {"a": n, "b": n}: compared cases with an errored row (counted 0 on primary)
    # {"a": the judge's agreement (summary form) or None, "b": ...; with --judged-passed "judged_passed": {"a": the
    # judge's standing (harness.judged.standing.JudgeStanding), "b": ...}; without, "people_passed": the runs that
    # recorded --judged-passed, whose `passed` compare read as the people's}
    judge: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the readers of the two runs' manifests said (an older format, say)

    def to_dict(self) -> dict:
        return asdict(self) | {"only_in_a": list(self.only_in_a), "only_in_b": list(self.only_in_b),
                               "metrics": [m.to_dict() for m in self.metrics],
                               "metrics_not_shared": list(self.metrics_not_shared),
                               "manifest_diff": [{"key": k, "a": a, "b": b} for k, a, b in self.manifest_diff]}


def compare_runs(run_a: str | Path, run_b: str | Path, *, shared_only: bool = False, tag: str | None = None,
                 seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES, primary: str | None = None,
                 judged: bool = False, min_judge_kappa: float = DEFAULT_MIN_JUDGE_KAPPA,
                 all_settings: bool = False) -> Comparison:
    """Read two run directories and compare them (see the module docstring for the definitions). `passed` is read
    the same way in both runs: with `judged` (--judged-passed) from claim_support_judged, which needs both runs'
    judge to earn it (`harness.judged.standing.judge_refusal`: JudgeRefused otherwise); without, the people's, also in a
    run that recorded --judged-passed. The rows are streamed into columns (`harness.report.columns`): memory holds the
    metrics' numbers, not the rows. `all_settings`: the manifest diff keeps machine measures, counts and every
    setting however often told (`harness.report.settings_diff`)."""
    (manifest_a, notes_a), (manifest_b, notes_b) = read_manifest_noting(run_a), read_manifest_noting(run_b)
    names = _shared_metrics(manifest_a, manifest_b)
    a, b = (columns_of_dir(path, manifest, notes, names,
                           passed_judged=judged if judged or manifest.settings.judged_passed else None)
            for path, manifest, notes in ((run_a, manifest_a, notes_a), (run_b, manifest_b, notes_b)))
    note: dict[str, Any]
    if judged:
        standings = [(f"run {side}", judge_standing(run.judged_rows, floor=min_judge_kappa,
                                                   prompt_sha256=judge_prompt_sha256(run.manifest)))
                     for side, run in (("A", a), ("B", b))]
        refused = judge_refusal(standings, compared=True)
        if refused is not None:
            raise refused
        note = {"judged_passed": {side: s.to_json() for side, (_, s) in zip("ab", standings)}}
    else:
        note = {"people_passed": [side for side, run in (("a", a), ("b", b)) if run.manifest.settings.judged_passed]}
    result = _compare(a, b, shared_only=shared_only, tag=tag, seed=seed, resamples=resamples, primary=primary,
                      all_settings=all_settings)
    return replace(result, judge=result.judge | note, notes=a.notes + b.notes)


def compare_rows(a: LoadedRun, b: LoadedRun, *, shared_only: bool = False, tag: str | None = None,
                 seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                 primary: str | None = None) -> Comparison:
    """Compare two loaded runs. Different case sets raise InputError unless `shared_only`; `tag` keeps only
    the cases whose row carries that tag in either run. `primary` (default `passed`, when both runs have it) is
    the metric errored cases count 0 on; a named one both runs lack is refused."""
    names = _shared_metrics(a.manifest, b.manifest)
    return _compare(columns_of_run(a, names), columns_of_run(b, names), shared_only=shared_only, tag=tag, seed=seed,
                    resamples=resamples, primary=primary)


def _shared_metrics(a: Manifest, b: Manifest) -> list[str]:
    names_b = set(b.metrics)
    return [n for n in a.metrics if n in names_b]


def _compare(a: RunColumns, b: RunColumns, *, shared_only: bool, tag: str | None, seed: int, resamples: int,
             primary: str | None, all_settings: bool = False) -> Comparison:
    if resamples < 1 or seed < 0:
        raise InputError(f"resamples must be at least 1 and the seed not negative, got {resamples} and {seed}")
    refuse_other_selections(a, b, shared_only=shared_only)
    rows_a, rows_b = _by_key(a), _by_key(b)
    ids_a, ids_b = {k[0] for k in rows_a}, {k[0] for k in rows_b}
    only_a, only_b = sorted(ids_a - ids_b), sorted(ids_b - ids_a)
    if not ids_a & ids_b:
        raise InputError(f"{a.name} and {b.name} share no case (A has {len(ids_a)}, B {len(ids_b)}); they were "
                         "run on different cases files, so there is nothing to compare")
    if (only_a or only_b) and not shared_only:
        raise InputError(f"{a.name} and {b.name} cover different cases: {len(only_a)} only in A "
                         f"({_some(only_a)}), {len(only_b)} only in B ({_some(only_b)}); pass --shared-only to "
                         f"compare the {len(ids_a & ids_b)} shared cases")
    keys = [k for k in rows_a if k in rows_b]
    unpaired = (len(rows_a) - len(keys)) + (len(rows_b) - len(keys))
    if unpaired and not (only_a or only_b) and not shared_only:
        raise InputError(f"{a.name} and {b.name} have different numbers of repeats ({unpaired} rows without a "
                         "partner); pass --shared-only to compare the repeats both have")
    if tag is not None:
        keys = [k for k in keys if tag in a.tags[rows_a[k]] or tag in b.tags[rows_b[k]]]
        if not keys:
            known = sorted({t for run in (a, b) for tags in set(run.tags) for t in tags})
            raise InputError(f"no shared case carries the tag {tag!r}; tags in these runs: "
                             f"{', '.join(known) or 'none'}")
    if not keys:
        raise InputError(f"{a.name} and {b.name} share no case; nothing to compare")
    metrics = _shared_metrics(a.manifest, b.manifest)
    not_shared = sorted(set(a.manifest.metrics) ^ set(b.manifest.metrics))
    main = _primary(primary, metrics)
    pairing = _Pairing.of(keys, rows_a, rows_b)
    results = tuple(_compare_metric(name, pairing, a, b, seed=seed, resamples=resamples, is_primary=name == main)
                    for name in metrics)
    review = {side: _review_counts(run.reviewed[at]) for side, run, at in pairing.sides(a, b)}
    errored = {side: int(np.unique(pairing.case[run.errored[at]]).size) for side, run, at in pairing.sides(a, b)}
    judges = {side: _judge(run, keys, seed) for side, run in (("a", a), ("b", b))}
    return Comparison(a.name, b.name, len(pairing.ids), tuple(only_a), tuple(only_b), tag, seed,
                      resamples, 0.95, results, tuple(not_shared),
                      tuple(manifest_diff(a.manifest.to_json(), b.manifest.to_json(), all_settings=all_settings)),
                      review, main, errored, judges)


@dataclass(frozen=True)
class _Pairing:
    """The compared keys (A's row order): their rows in A and B, and the case each belongs to (`ids`, numbered in
    order of first appearance)."""

    at_a: np.ndarray
    at_b: np.ndarray
    case: np.ndarray
    ids: tuple[str, ...]

    @classmethod
    def of(cls, keys: Sequence[Key], rows_a: dict[Key, int], rows_b: dict[Key, int]) -> _Pairing:
        numbers: dict[str, int] = {}
        case = np.fromiter((numbers.setdefault(k[0], len(numbers)) for k in keys), dtype=np.int64, count=len(keys))
        return cls(np.fromiter((rows_a[k] for k in keys), dtype=np.int64, count=len(keys)),
                   np.fromiter((rows_b[k] for k in keys), dtype=np.int64, count=len(keys)), case, tuple(numbers))

    def sides(self, a: RunColumns, b: RunColumns) -> tuple[tuple[str, RunColumns, np.ndarray], ...]:
        return ("a", a, self.at_a), ("b", b, self.at_b)


def _judge(run: RunColumns, keys: Sequence[Key], seed: int) -> dict | None:
    """The judge's agreement with people over the compared rows (those a judge rated), in the compared order."""
    if not run.judged_rows:
        return None
    judged = {row.key: row for row in run.judged_rows}
    found = judge_agreement([judged[k] for k in keys if k in judged], seed=seed)
    return None if found is None else found.summary_json()


def _primary(name: str | None, metrics: Sequence[str]) -> str | None:
    if name is None:
        return DEFAULT_PRIMARY if DEFAULT_PRIMARY in metrics else None
    if name not in metrics:
        raise InputError(f"--primary {name}: not a metric of both runs; they share {', '.join(metrics) or 'none'}")
    return name


def _by_key(run: RunColumns) -> dict[Key, int]:
    out: dict[Key, int] = {}
    for i, key in enumerate(run.keys):
        if out.setdefault(key, i) != i:
            raise InputError(f"{run.path}: case {key[0]!r} repeat {key[1]} appears twice in the rows")
    return out


def _some(ids: Sequence[str], limit: int = 5) -> str:
    return ", ".join(ids[:limit]) + (", ..." if len(ids) > limit else "") if ids else "none"


def _review_counts(reviewed: np.ndarray) -> dict:
    done = int(reviewed.sum())
    return {"pending": len(reviewed) - done, "reviewed": done}


def _per_case(name: str, pairing: _Pairing, a: RunColumns, b: RunColumns, is_primary: bool
              ) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """Per case: the mean over repeats of the paired values (both non-null), cases in order of their first paired
    row; and the number of cases paired on no row but with a value in one run only."""
    va = a.errored_values(name, primary=is_primary)[pairing.at_a]
    vb = b.errored_values(name, primary=is_primary)[pairing.at_b]
    both = ~np.isnan(va) & ~np.isnan(vb)
    paired_case = pairing.case[both]
    found, first = np.unique(paired_case, return_index=True)
    order = found[np.argsort(first, kind="stable")]
    width = len(pairing.ids)
    count = np.bincount(paired_case, minlength=width)[order]
    mean_a = np.bincount(paired_case, weights=va[both], minlength=width)[order] / count
    mean_b = np.bincount(paired_case, weights=vb[both], minlength=width)[order] / count
    one_side = np.unique(pairing.case[np.isnan(va) != np.isnan(vb)])
    unpaired = int(np.setdiff1d(one_side, order, assume_unique=True).size)
    return [pairing.ids[i] for i in order], mean_a, mean_b, unpaired


def _compare_metric(name: str, pairing: _Pairing, a: RunColumns, b: RunColumns, *, seed: int, resamples: int,
                    is_primary: bool) -> MetricComparison:
    ids, mean_a, mean_b, unpaired = _per_case(name, pairing, a, b, is_primary)
    s = paired_stats(mean_a, mean_b, seed=seed, resamples=resamples)
    diff = (mean_b - mean_a) * (1.0 if higher_is_better(name) else -1.0)  # > 0: B is better
    fixed = tuple(ids[i] for i in np.nonzero(diff > _EPS)[0])
    broke = tuple(ids[i] for i in np.nonzero(diff < -_EPS)[0])
    mde = minimum_detectable_difference(mean_a, mean_b, seed=seed)
    odd = disagreement(s.ci_low, s.ci_high, s.p_value)
    return MetricComparison(name, len(ids), unpaired, s.mean_a, s.mean_b, s.delta, s.ci_low, s.ci_high, s.p_value,
                            len(fixed), len(ids) - len(fixed) - len(broke), len(broke), fixed, broke, mde.mde,
                            mde.status, s.p_method, s.differing, s.ci_method, mde.method, (odd,) if odd else ())


def worse_on(c: Comparison, names: Sequence[str]) -> list[tuple[MetricComparison, float]]:
    """The named metrics on which B is significantly worse than A: delta below 0 and the sign-flip p, Holm-adjusted
    over the named metrics, at most GATE_ALPHA. Each with its adjusted p. A name the runs lack is refused."""
    by_name = {m.metric: m for m in c.metrics}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise InputError(f"--fail-if-worse: {', '.join(missing)} is not a metric of both runs; they share "
                         f"{', '.join(by_name) or 'none'}")
    chosen = [by_name[n] for n in names]
    adjusted = holm([m.p_value for m in chosen])
    return [(m, p) for m, p in zip(chosen, adjusted)
            if p is not None and p <= GATE_ALPHA and m.delta is not None and m.delta < 0]
