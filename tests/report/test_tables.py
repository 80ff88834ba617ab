"""The metric tables of `rag-eval run` (the summary) and `rag-eval compare` (issue #30, 7): columns sized to the
longest name, and the tutorial's names for two of our checks (facts = key_point_coverage, behaviour = abstention,
the registry's `twin`) in one row while their values agree."""

from __future__ import annotations

import re

import pytest

from harness.cli.run import render_summary
from harness.evaluate import run_evaluation
from harness.metrics.registry import REGISTRY, shown_once
from harness.records import MetricSummary
from harness.report.compare import compare_runs
from harness.report.compare_text import render_markdown, render_table
from harness.report.html import render_report
from harness.runs import load_run, read_manifest, read_summary
from harness.settings import RunSettings
from tests.conftest import HANDBOOK, SAMPLE_DOCS

LONG = "claims_supported_judged"  # the longest metric name


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    common = dict(system="offline", out=str(out), docs=str(HANDBOOK), cases=str(SAMPLE_DOCS / "cases.jsonl"))
    return (run_evaluation(RunSettings(label="a", **common)).run_dir,
            run_evaluation(RunSettings(label="b", chunk_size=600, **common)).run_dir)


def _metric_lines(table: str, first: str) -> list[str]:
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("metric "))
    return [line for line in lines[start + 1:] if re.match(r"[a-z@0-9_]+[ =*]", line) and not line.startswith(" ")
            and line.split()[0] in first]


def _column_ends(lines: list[str], column: int) -> set[int]:
    """Where the `column`-th figure after the label ends on each line (the label may hold spaces: `a = b`)."""
    ends = set()
    for line in lines:
        figures = [m.end() for m in re.finditer(r"\S+", line[line.index("  "):])]
        ends.add(line.index("  ") + figures[column])
    return ends


def test_summary_columns_fit_the_longest_name(runs):
    table = render_summary(read_summary(runs[0]), read_manifest(runs[0]))
    lines = _metric_lines(table, set(read_summary(runs[0]).metrics))
    assert any(line.startswith(LONG + " ") for line in lines)
    assert len(_column_ends(lines, 0)) == 1 and len(_column_ends(lines, 3)) == 1  # mean and error line up


def test_compare_columns_fit_the_longest_name(runs):
    table = render_table(compare_runs(*runs))
    lines = _metric_lines(table, {m for m in read_manifest(runs[0]).metrics})
    assert any(line.startswith(LONG + " ") for line in lines) and len(lines) > 10
    assert len(_column_ends(lines, 0)) == 1 and len(_column_ends(lines, 1)) == 1  # n and A line up
    header = table.splitlines()[[i for i, x in enumerate(table.splitlines()) if x.startswith("metric ")][0]]
    assert header.index(" n ") + 2 == _column_ends(lines, 0).pop()


def test_twins_share_one_row_with_both_names(runs):
    summary = read_summary(runs[0])
    table = render_summary(summary, read_manifest(runs[0]))
    assert "facts = key_point_coverage" in table and "behaviour = abstention" in table
    assert not re.search(r"^(key_point_coverage|abstention) ", table, re.M)
    assert "one check under two names" in table
    compared = compare_runs(*runs)
    text, markdown = render_table(compared), render_markdown(compared)
    assert "behaviour = abstention" in text and not re.search(r"^abstention ", text, re.M)
    assert "| behaviour = abstention |" in markdown and "| abstention |" not in markdown
    page = render_report(load_run(runs[1]), load_run(runs[0]))
    assert "<td>behaviour = abstention</td>" in page and "<td>abstention</td>" not in page
    assert len(compared.metrics) == len(read_manifest(runs[0]).metrics)  # the data keeps every metric


def test_twins_that_disagree_keep_their_own_rows(runs):
    summary = read_summary(runs[0])
    other = MetricSummary(mean=0.5, scored=19, not_applicable=2, errored=0)  # an abstain case with facts, say
    changed = summary.model_copy(update={"metrics": summary.metrics | {"key_point_coverage": other}})
    table = render_summary(changed, read_manifest(runs[0]))
    assert re.search(r"^facts +0\.", table, re.M) and re.search(r"^key_point_coverage +0\.500", table, re.M)
    assert "behaviour = abstention" in table


def test_shown_once_follows_the_registry():
    twins = {spec.family: spec.twin for spec in REGISTRY.values() if spec.twin}
    assert twins == {"key_point_coverage": "facts", "abstention": "behaviour"}
    names = ["facts", "behaviour", "key_point_coverage", "abstention"]
    assert shown_once(names, lambda a, b: True) == [("facts", "facts = key_point_coverage"),
                                                     ("behaviour", "behaviour = abstention")]
    assert shown_once(names, lambda a, b: a == "behaviour") == [("facts", "facts"), ("behaviour",
                                                                 "behaviour = abstention"),
                                                                ("key_point_coverage", "key_point_coverage")]
    assert shown_once(["abstention"], lambda a, b: True) == [("abstention", "abstention")]  # its twin is not listed
