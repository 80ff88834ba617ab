"""`rag-eval export RUN --csv`: one line per case, every metric, the failure stage and reasons, formula-safe
cells, read back with Python's csv module."""

from __future__ import annotations

import csv
import io

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.inputs import guard
from harness.report.csv_export import rows_csv
from harness.report.funnel import stage_of
from harness.runs import read_manifest, read_rows
from harness.settings import RunSettings
from tests.conftest import HANDBOOK, sample_cases
from tests.support.rowkit import make_row


def test_an_offline_run_exports_one_line_per_case(tmp_path, capsys):
    run_dir = run_evaluation(RunSettings(system="offline", docs=str(HANDBOOK), cases=sample_cases(tmp_path),
                                         out=str(tmp_path / "r"))).run_dir
    target = tmp_path / "rows.csv"
    assert main(["export", str(run_dir), "--csv", str(target)]) == 0
    assert "21 rows of" in capsys.readouterr().err
    with open(target, newline="", encoding="utf-8") as fh:
        lines = list(csv.DictReader(fh))
    rows = read_rows(run_dir)
    metrics = read_manifest(run_dir).metrics
    assert len(lines) == len(rows) == 21
    assert list(lines[0])[:6] == ["case_id", "repeat", "question", "tags", "status", "error"]
    assert list(lines[0])[6:] == [*metrics, "failure_stage", "failure_reasons", "warnings"]
    for line, row in zip(lines, rows):
        assert (line["case_id"], line["status"], line["tags"]) == (row.case_id, row.answer.status,
                                                                   " | ".join(row.tags))
        for name in metrics:
            value = row.metrics.get(name)
            assert line[name] == ("" if value is None else repr(float(value)))  # not applicable stays empty
        assert line["failure_stage"] == ("" if row.metrics.get("passed") == 1.0 else stage_of(row))
        assert line["failure_reasons"] == " | ".join(row.failure_reasons)
        assert line["warnings"] == " | ".join(row.warnings)
    assert "" in {line["failure_stage"] for line in lines} and "passed" not in {line["failure_stage"] for line in lines}


def test_cells_a_spreadsheet_would_run_are_defused():
    rows = [make_row("=cmd|' /C calc'!A0", {"passed": 0.0}, tags=["+tag", "@x"], question="-1+1 is what?"),
            make_row("c2", {"passed": None}, error="\tboom", question="plain, with \"quotes\"\nand a new line")]
    text = rows_csv(rows, ["passed"])
    lines = list(csv.DictReader(io.StringIO(text)))
    assert lines[0]["case_id"] == "'=cmd|' /C calc'!A0" and lines[0]["tags"] == "'+tag | @x"
    assert lines[0]["question"] == "'-1+1 is what?" and lines[0]["passed"] == "0.0"
    assert lines[1]["error"] == "'\tboom" and lines[1]["passed"] == "" and lines[1]["failure_stage"] == "errored"
    assert lines[1]["question"] == "plain, with \"quotes\"\nand a new line"  # csv quoting round-trips it
    assert lines[1]["failure_reasons"] == "error: \tboom"
    assert [guard(t) for t in ("=1", "+1", "-1", "@1", "\r1", "a=1", "")] == \
        ["'=1", "'+1", "'-1", "'@1", "'\r1", "a=1", ""]


def test_failure_stage_is_empty_when_passed_is_1():
    # passed 1 with a note (a claim reviewers disagree on) exported failure_stage "other" (issue #29)
    rows = [make_row("c1", {"passed": 1.0}), make_row("c2", {"passed": 0.0})]
    rows[0] = rows[0].model_copy(update={"failure_reasons": ("claim 'x' in disagreement between reviewers",)})
    lines = list(csv.DictReader(io.StringIO(rows_csv(rows, ["passed"]))))
    assert [(x["passed"], x["failure_stage"]) for x in lines] == [("1.0", ""), ("0.0", "other")]
