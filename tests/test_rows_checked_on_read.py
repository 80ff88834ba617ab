"""Issue #43: every command that reads rows checks each metric's range, as NaN is refused.

A row with `passed` = 7.5 once gave compare a mean of 1.5625 and a +0.81 delta, and the report showed 7.500. Now
compare, report and export refuse it with one line naming the file, the line and the metric.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import metrics as m
from harness.cli import main
from harness.records import metric_problem
from harness.records.row import SHARES, ZERO_ONE

WORKSHOP = Path(__file__).resolve().parent.parent / "sample_docs" / "workshop" / "cases.csv"


def _scored(out: Path, label: str) -> Path:
    assert main(["score", "--cases", str(WORKSHOP), "--out", str(out), "--label", label, "--workers", "1"]) == 0
    [run] = [p for p in out.iterdir() if p.name.endswith(label)]
    return run


def _set_metric(run: Path, line: int, name: str, value: float) -> Path:
    rows = run / "rows.jsonl"
    lines = rows.read_text().splitlines()
    row = json.loads(lines[line - 1])
    row["metrics"][name] = value
    lines[line - 1] = json.dumps(row, separators=(",", ":"), ensure_ascii=False)
    rows.write_text("\n".join(lines) + "\n")
    return rows


@pytest.fixture
def runs(tmp_path, capsys):
    a, b = _scored(tmp_path / "results", "a"), _scored(tmp_path / "results", "b")
    capsys.readouterr()
    return a, b


@pytest.mark.parametrize("name, value, says", [
    ("passed", 7.5, "metrics.passed: 7.5, but this metric is 0 or 1"),
    ("passed", 0.5, "metrics.passed: 0.5, but this metric is 0 or 1"),
    ("key_point_coverage", 1.5, "metrics.key_point_coverage: 1.5, but this metric is a share from 0 to 1"),
    ("retrieval_recall", -0.25, "metrics.retrieval_recall: -0.25, but this metric is a share from 0 to 1"),
])
@pytest.mark.parametrize("command", ["compare", "report", "export"])
def test_an_out_of_range_metric_is_refused_naming_file_line_and_field(runs, tmp_path, capsys, command, name, value,
                                                                     says):
    a, b = runs
    rows = _set_metric(b, 3, name, value)
    argv = {"compare": ["compare", str(a), str(b)], "report": ["report", str(b)],
            "export": ["export", str(b), "--csv", str(tmp_path / "rows.csv")]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{rows}:3: not a result row ({says})" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "rows.csv").exists() and not (b / "report.html").exists()


def test_metrics_in_range_are_read_as_before(runs, tmp_path):
    a, b = runs
    _set_metric(b, 3, "key_point_coverage", 0.5)
    assert main(["compare", str(a), str(b)]) in (0, 3)  # a verdict, not a refusal
    assert main(["export", str(b), "--csv", str(tmp_path / "rows.csv")]) == 0


def test_every_metric_has_a_range():
    families = {*m.REGISTRY, "passed"}
    assert ZERO_ONE | SHARES == families and not ZERO_ONE & SHARES
    assert metric_problem({"hit@3": 1.0, "rr": 0.25, "passed": None, "unknown_metric": 42.0}) is None
    assert metric_problem({"hit@3": 2.0}) == "metrics.hit@3: 2.0, but this metric is 0 or 1"
