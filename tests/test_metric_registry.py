"""Facts about metrics live on the registry (aliases, direction, retrieval, what feeds `passed`), code asks it,
and the docs' metric table is generated from it (`python -m harness.metrics --markdown`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness import metrics as m
from harness.records import Manifest
from harness.report.compare import compare_rows
from harness.runs import LoadedRun, write_rows
from harness.settings import RunSettings
from harness.sweep.plan import Cell, SweepPlan
from harness.sweep.run import leaderboard_of
from tests.conftest import REPO
from tests.support.rowkit import make_row

# A metric where lower is better, registered for a test only: seconds a reviewer needed, say.
_LOWER = m.MetricSpec("review_minutes", False, "minutes a reviewer needed (test only)", lambda o, k: None,
                      higher_is_better=False)


def test_the_docs_metric_page_equals_the_generated_table():
    out = subprocess.run([sys.executable, "-m", "harness.metrics", "--markdown"], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    page = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert page == out.stdout, "regenerate: python -m harness.metrics --markdown > docs/metrics.md"
    for spec in m.REGISTRY.values():  # every registered metric has its row
        assert f"| `{spec.family}{'@k' if spec.at_k else ''}` | {spec.description} |" in page


def test_metrics_main_without_markdown_says_how_to_call_it():
    out = subprocess.run([sys.executable, "-m", "harness.metrics"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and "usage: python -m harness.metrics --markdown" in out.stderr


def test_the_lists_once_kept_beside_the_registry_are_derived_from_it():
    assert m.PASS_CHECKS == ("quote_valid", "grounded", "retrieval_recall", "citation_precision", "claim_support",
                             "key_point_coverage", "abstention")
    assert m.TUTORIAL_CHECKS == ("retrieval_recall", "citation_precision", "claim_support", "key_point_coverage",
                                 "abstention")
    retrieval = [n for n in m.metric_names((1, 3)) if m.is_retrieval(n)]
    assert retrieval == ["hit@1", "hit@3", "recall@1", "recall@3", "rr", "retrieval_recall"]
    assert not m.is_retrieval("passed") and not m.is_retrieval("no_such_metric")
    assert all(m.higher_is_better(n) for n in m.metric_names())


def test_aliases_are_accepted_where_users_name_a_metric():
    assert m.parse_metric("mrr") == "rr" and m.parse_metric("behavior") == "behaviour"
    assert m.parse_metric("hit@2") == "hit@2"
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        m.parse_metric("nope")


def test_compare_reads_the_direction_from_the_registry(monkeypatch):
    monkeypatch.setitem(m.REGISTRY, _LOWER.family, _LOWER)
    rows = lambda values: tuple(make_row(c, {"review_minutes": v}) for c, v in values.items())  # noqa: E731
    a = LoadedRun("A", Path("A"), rows({"c1": 5.0, "c2": 2.0}), Manifest(run_id="A", metrics=["review_minutes"]))
    b = LoadedRun("B", Path("B"), rows({"c1": 3.0, "c2": 4.0}), Manifest(run_id="B", metrics=["review_minutes"]))
    result = compare_rows(a, b).metrics[0]
    assert result.fixed == ("c1",) and result.broke == ("c2",)  # fewer minutes is the better side


def test_a_sweep_ranks_a_lower_is_better_primary_downwards(monkeypatch, tmp_path):
    monkeypatch.setitem(m.REGISTRY, _LOWER.family, _LOWER)
    cells, dirs = [], []
    for label, minutes in (("base", 5.0), ("fast", 1.0)):
        run = tmp_path / label
        run.mkdir()
        write_rows(run, [make_row(f"c{i}", {"review_minutes": minutes}) for i in range(6)])
        cells.append(Cell(label, (), RunSettings(), label))
        dirs.append(run)
    plan = SweepPlan(None, "0" * 64, (), tuple(cells), "base", "review_minutes", 0.05, None, None)
    board, _ = leaderboard_of(plan, dirs)
    assert board.higher_is_better is False
    assert board.entry("fast").verdict == "better"
