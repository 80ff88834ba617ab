"""The run summary accumulated in one pass (`harness.summary.Summarizer`) against the list-based way it was
computed before (the reference below: `sum` over every value, per metric, per origin), on rows with inexact
values (thirds), not-applicable values, errors, two origins interleaved and repeats."""

from __future__ import annotations

import random
import sys

import pytest

import harness.summary as summary_module
from harness.cases import DRAFTED_TAG, origin
from harness.summary import Summarizer, summarize
from tests.support.rowkit import make_row

NAMES = ["a", "b", "passed"]


def _rows(n: int, seed: int = 3, *, repeats: bool = True):
    rng = random.Random(seed)
    values = [None, 0.0, 1.0, 1 / 3, 2 / 3, 0.25, 0.1]
    rows = []
    for i in range(n):
        error = "boom" if rng.random() < 0.05 else None
        metrics = {} if error else {"a": rng.choice(values), "b": rng.choice(values),
                                    "passed": rng.choice([0.0, 1.0])}
        rows.append(make_row(f"c{i % (n // 2) if repeats else i}", metrics, error=error,
                             repeat=i // (n // 2) if repeats else 0,
                             tags=(DRAFTED_TAG,) if rng.random() < 0.3 else ("hand",), answer=f"answer {i % 3}"))
    return rows


def _reference(rows, na_as_pass):
    """Each metric's (mean, scored, not applicable, errored) as summarize computed them from a list."""
    errored = sum(1 for r in rows if r.errored)
    unerrored = len(rows) - errored
    out = {}
    for name in NAMES:
        scored = [v for r in rows if not r.errored and (v := r.metrics.get(name)) is not None]
        total, count = sum(scored), len(scored)
        if na_as_pass:
            total, count = total + unerrored - len(scored), unerrored
        out[name] = (total / count if count else None, len(scored), unerrored - len(scored), errored)
    return out


def _means(metrics):
    return {name: (m.mean, m.scored, m.not_applicable, m.errored) for name, m in metrics.items()}


def _check(rows, summary, na_as_pass):
    assert _means(summary.metrics) == _reference(rows, na_as_pass)
    for kind, metrics in (summary.by_origin or {}).items():
        assert _means(metrics) == _reference([r for r in rows if origin(r.tags) == kind], na_as_pass)
    assert summary.rows == len(rows) and summary.errored == sum(r.errored for r in rows)
    assert summary.passes == sum(r.metrics.get("passed") == 1.0 for r in rows)


@pytest.mark.parametrize("na_as_pass", [False, True])
def test_one_pass_gives_the_list_based_digits(na_as_pass):
    rows = _rows(400)
    got = summarize(iter(rows), NAMES, {}, na_as_pass=na_as_pass)  # an iterator: one pass
    _check(rows, got, na_as_pass)
    assert set(got.by_origin) == {"hand-written", "drafted"}
    stability = got.repeat_stability["a"]
    cases = {r.case_id for r in rows}
    assert stability["cases"] <= len(cases) and stability["flipped"] > 0


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12's sum compensates within a call: exact up to _FOLD")
def test_folding_blocks_keeps_the_digits(monkeypatch):
    monkeypatch.setattr(summary_module, "_FOLD", 7)  # many folds, one origin switching in mid-block
    rows = _rows(300, seed=5)
    for na_as_pass in (False, True):
        _check(rows, summarize(rows, NAMES, {}, na_as_pass=na_as_pass), na_as_pass)


def test_one_origin_has_no_breakdown_and_no_repeats_no_stability():
    rows = [r.model_copy(update={"tags": ()}) for r in _rows(50, repeats=False)]
    got = summarize(rows, NAMES, {})
    assert got.by_origin is None and got.repeat_stability is None
    _check(rows, got, False)


def test_without_stability_nothing_is_kept_per_case_and_the_means_are_the_same():
    rows = _rows(200)
    summarizer = Summarizer(NAMES, stability=False)
    for row in rows:
        summarizer.add(row)
    got = summarizer.summary({})
    assert got.repeat_stability is None and summarizer._verdicts == {}
    assert got.model_copy(update={"repeat_stability": None}) == summarize(rows, NAMES, {}).model_copy(
        update={"repeat_stability": None})
