"""Paired comparison of two runs over the same cases: per-metric statistics, flips, and the manifest diff.

Definitions (B is compared with A; which way is better is the registry's `higher_is_better`):
- A metric is paired on a case when it is non-null in both runs. Means, delta and the tests use paired cases
  only, so `delta == mean_b - mean_a` exactly. A case answered several times (`repeat`) contributes the mean of
  its repeats, so the unit of resampling is always the case.
- Bootstrap interval: resample the n per-case differences d = b - a with replacement, `resamples` times, take
  the mean of each resample, and report the 2.5th and 97.5th percentiles (percentile method).
- p-value: paired randomisation (sign-flip) test, two-sided. Under "no difference" each d_i is as likely to be
  -d_i, so p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + resamples) over random sign vectors s. When
  2**n <= resamples (and n <= 16) every sign vector is enumerated instead and p is exact: #{...} / 2**n;
  `p_method` says which (`exact` or `monte-carlo`), per metric, since n differs between metrics.
- Errored cases (one rule, shared with the sweep leaderboard): an errored row counts 0 on the primary metric
  (default `passed`), so errors never make a run look better; on every other metric it has no value and is left
  out, as in summaries. `errored` counts the errored compared cases of each run.
- The p-values are per metric and not corrected across metrics; the primary metric is the one to decide on.
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
from ..judged import judge_agreement, judge_measured, judged_passed
from ..metrics import higher_is_better
from ..records import Row
from ..runs import LoadedRun, load_run
from ..stats.defaults import DEFAULT_PRIMARY, DEFAULT_RESAMPLES, DEFAULT_SEED
from ..stats.mde import minimum_detectable_difference
from ..stats.paired import exact_sign_flip, paired_stats
from ..summary import errored_value

__all__ = ["Comparison", "MetricComparison", "compare_rows", "compare_runs", "manifest_diff"]

_EPS = 1e-12
# Manifest keys that differ between any two runs and say nothing about what was measured.
_NOISE = {"run_id", "status", "started_at", "ended_at", "command", "settings.out", "settings.label",
          # the index's build time and how much came from the embedding cache say nothing about the setup
          "system.index.created_at", "system.index.counts.embedded", "system.index.counts.from_cache"}
_CODE = ("git_commit", "package_version")
# answer_options is left out: it is derived from settings and would repeat every settings change.
_DIFFED = ("settings", "prompt_template", "system", "collection", "rescored_from")

Key = tuple[str, int]  # (case_id, repeat)



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
    p_method: str | None = None  # exact (every sign vector) or monte-carlo (`resamples` random sign vectors)

    def to_dict(self) -> dict:
        return asdict(self) | {"fixed": list(self.fixed), "broke": list(self.broke)}


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
    # {"a": the judge's agreement (summary form) or None, "b": ..., "judged_passed": {"a": bool, "b": bool}}
    judge: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the readers of the two runs' manifests said (an older format, say)

    def to_dict(self) -> dict:
        return asdict(self) | {"only_in_a": list(self.only_in_a), "only_in_b": list(self.only_in_b),
                               "metrics": [m.to_dict() for m in self.metrics],
                               "metrics_not_shared": list(self.metrics_not_shared),
                               "manifest_diff": [{"key": k, "a": a, "b": b} for k, a, b in self.manifest_diff]}


def compare_runs(run_a: str | Path, run_b: str | Path, *, shared_only: bool = False, tag: str | None = None,
                 seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                 primary: str | None = None, judged: bool = False) -> Comparison:
    """Load two run directories and compare them (see the module docstring for the definitions). With `judged`
    (--judged-passed), `passed` reads claim_support_judged in each run whose judge is measured against people."""
    a, b = load_run(run_a), load_run(run_b)
    switched = {}
    if judged:
        switched = {"a": judge_measured(a.rows), "b": judge_measured(b.rows)}
        a, b = replace(a, rows=tuple(judged_passed(a.rows))), replace(b, rows=tuple(judged_passed(b.rows)))
    result = replace(compare_rows(a, b, shared_only=shared_only, tag=tag, seed=seed, resamples=resamples,
                                  primary=primary), notes=a.notes + b.notes)
    return replace(result, judge=result.judge | {"judged_passed": switched}) if judged else result


def compare_rows(a: LoadedRun, b: LoadedRun, *, shared_only: bool = False, tag: str | None = None,
                 seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                 primary: str | None = None) -> Comparison:
    """Compare two loaded runs. Different case sets raise InputError unless `shared_only`; `tag` keeps only
    the cases whose row carries that tag in either run. `primary` (default `passed`, when both runs have it) is
    the metric errored cases count 0 on; a named one both runs lack is refused."""
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
        keys = [k for k in keys if tag in rows_a[k].tags or tag in rows_b[k].tags]
        if not keys:
            known = sorted({t for r in (*a.rows, *b.rows) for t in r.tags})
            raise InputError(f"no shared case carries the tag {tag!r}; tags in these runs: "
                             f"{', '.join(known) or 'none'}")
    if not keys:
        raise InputError(f"{a.name} and {b.name} share no case; nothing to compare")
    names_b = set(b.manifest.metrics)
    metrics = [n for n in a.manifest.metrics if n in names_b]
    not_shared = sorted(set(a.manifest.metrics) ^ names_b)
    main = _primary(primary, metrics)
    results = tuple(_compare_metric(name, keys, rows_a, rows_b, seed=seed, resamples=resamples,
                                    is_primary=name == main) for name in metrics)
    review = {side: _review_counts([rows[k] for k in keys]) for side, rows in (("a", rows_a), ("b", rows_b))}
    errored = {side: len({k[0] for k in keys if rows[k].errored}) for side, rows in (("a", rows_a), ("b", rows_b))}
    judges = {side: _judge([rows[k] for k in keys], seed) for side, rows in (("a", rows_a), ("b", rows_b))}
    return Comparison(a.name, b.name, len({k[0] for k in keys}), tuple(only_a), tuple(only_b), tag, seed,
                      resamples, 0.95, results, tuple(not_shared),
                      tuple(manifest_diff(a.manifest.to_json(), b.manifest.to_json())),
                      review, main, errored, judges)


def _judge(rows: Sequence[Row], seed: int) -> dict | None:
    found = judge_agreement(rows, seed=seed)
    return None if found is None else found.summary_json()


def _primary(name: str | None, metrics: Sequence[str]) -> str | None:
    if name is None:
        return DEFAULT_PRIMARY if DEFAULT_PRIMARY in metrics else None
    if name not in metrics:
        raise InputError(f"--primary {name}: not a metric of both runs; they share {', '.join(metrics) or 'none'}")
    return name


def _by_key(run: LoadedRun) -> dict[Key, Row]:
    out: dict[Key, Row] = {}
    for row in run.rows:
        key = row.key
        if key in out:
            raise InputError(f"{run.path}: case {key[0]!r} repeat {key[1]} appears twice in the rows")
        out[key] = row
    return out


def _some(ids: Sequence[str], limit: int = 5) -> str:
    return ", ".join(ids[:limit]) + (", ..." if len(ids) > limit else "") if ids else "none"


def _review_counts(rows: Sequence[Row]) -> dict:
    reviewed = sum(1 for r in rows if r.human_claim_review == "reviewed")
    return {"pending": len(rows) - reviewed, "reviewed": reviewed}


def _per_case(name: str, keys: Sequence[Key], rows_a: dict[Key, Row], rows_b: dict[Key, Row],
              is_primary: bool) -> tuple[list[str], list[float], list[float], int]:
    """Per case: the mean over repeats of the paired values (both non-null); and the unpaired count."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    unpaired = set()
    for key in keys:
        va = errored_value(rows_a[key], name, primary=is_primary)
        vb = errored_value(rows_b[key], name, primary=is_primary)
        if va is not None and vb is not None:
            pairs.setdefault(key[0], []).append((float(va), float(vb)))
        elif (va is None) != (vb is None):
            unpaired.add(key[0])
    ids = list(pairs)
    a = [sum(p[0] for p in pairs[i]) / len(pairs[i]) for i in ids]
    b = [sum(p[1] for p in pairs[i]) / len(pairs[i]) for i in ids]
    return ids, a, b, len(unpaired - set(ids))


def _compare_metric(name: str, keys: Sequence[Key], rows_a: dict[Key, Row], rows_b: dict[Key, Row], *, seed: int,
                    resamples: int, is_primary: bool) -> MetricComparison:
    ids, a, b, unpaired = _per_case(name, keys, rows_a, rows_b, is_primary)
    stats = paired_stats(np.array(a), np.array(b), seed=seed, resamples=resamples)
    diff = (np.array(b) - np.array(a)) * (1.0 if higher_is_better(name) else -1.0)  # > 0: B is better
    fixed = tuple(i for i, d in zip(ids, diff) if d > _EPS)
    broke = tuple(i for i, d in zip(ids, diff) if d < -_EPS)
    mde = minimum_detectable_difference(a, b)
    return MetricComparison(name, len(ids), unpaired, *stats, len(fixed), len(ids) - len(fixed) - len(broke),
                            len(broke), fixed, broke, mde.mde, mde.status,
                            ("exact" if exact_sign_flip(len(ids), resamples) else "monte-carlo") if ids else None)


def manifest_diff(a: dict, b: dict) -> list[tuple[str, Any, Any]]:
    """What differs between two manifests, as (dotted key, value in A, value in B), sorted within sections:
    settings, prompt template, system (models and digests), collection, inputs (document and
    cases hashes), rescoring source, then `code.*` (git commit, package version). Run ids, times, the command
    line, the output folder and the label are left out: they differ between any two runs."""
    flat_a, flat_b = _flatten_manifest(a), _flatten_manifest(b)
    keys = list(dict.fromkeys([*flat_a, *flat_b]))
    out = [(k, flat_a.get(k), flat_b.get(k)) for k in keys if k not in _NOISE and flat_a.get(k) != flat_b.get(k)]
    order = {s: i for i, s in enumerate((*_DIFFED, "inputs", "code"))}
    return sorted(out, key=lambda item: (order.get(item[0].split(".", 1)[0].split("[", 1)[0], 99), item[0]))


def _flatten_manifest(manifest: dict) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section in _DIFFED:
        if section in manifest:
            _flatten(manifest[section], section, flat)
    inputs = manifest.get("inputs", {})
    flat["inputs.cases.sha256"] = inputs.get("cases", {}).get("sha256")
    for doc in inputs.get("documents", ()):
        flat[f"inputs.documents[{doc.get('doc_id')}].sha256"] = doc.get("sha256")
    for key in _CODE:
        flat[f"code.{key}"] = manifest.get(key)
    return flat


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}", out)
    else:
        out[prefix] = value
