"""The planted-defect fixture (issue 40): built from the offline baseline's own `saved/` files over the bundle, scored
by `rag-eval score`; every kind flagged by the field docs/what-the-checks-catch.md names, with the figures its table
states; no clean row flagged; each reviewer warning on its rows, counted in summary.json, shown in the report and the
export."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.records import REVIEW_WARNINGS, Row
from harness.runs import read_rows
from harness.saved.planted import DEFECTS, write_planted
from harness.settings import RunSettings
from tests.conftest import REPO, SAMPLE_DOCS

PAGE = REPO / "docs" / "what-the-checks-catch.md"


def _flagged(row: Row, field: str) -> bool:
    """Whether the row's named field flags it: a metric below 1, a warning of that kind, or the rank note."""
    if field.startswith("metrics."):
        value = row.metrics.get(field.removeprefix("metrics."))
        return value is not None and value < 1.0
    if field.startswith("warnings: "):
        return any(w.startswith(field.removeprefix("warnings: ") + ":") for w in row.warnings)
    assert field.startswith("failure_reasons"), field
    return any(re.fullmatch(r"expected .*, first retrieved at rank \d+", r) for r in row.failure_reasons)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, dict[str, list[Row]]]:
    root = tmp_path_factory.mktemp("planted")
    run = run_evaluation(RunSettings(system="offline", out=str(root / "runs"), docs=str(SAMPLE_DOCS),
                                     cases=str(SAMPLE_DOCS / "all_cases.jsonl"))).run_dir
    fixture = write_planted(run / "saved", root / "planted")
    assert main(["score", "--cases", str(fixture / "cases.jsonl"), "--out", str(root / "scored"), "--json",
                 "--workers", "1"]) == 0
    [scored] = (root / "scored").iterdir()
    by_kind: dict[str, list[Row]] = {}
    for row in read_rows(scored):
        tag = next(t for t in row.tags if t.startswith("planted:"))
        by_kind.setdefault(tag.removeprefix("planted:"), []).append(row)
    return scored, by_kind


def _table() -> dict[str, tuple[str, str, str]]:
    """kind -> (field, flagged, pass) from the page's table."""
    out = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`") and cells[3].count("/") == 1:
            out[cells[0].strip("`")] = (cells[2].strip("`"), cells[3], cells[4])
    return out


def test_the_page_lists_every_kind_with_the_field_the_code_names():
    table = _table()
    assert list(table) == [d.key for d in DEFECTS]
    assert {k: field for k, (field, _, _) in table.items()} == {d.key: d.flagged_by for d in DEFECTS}


@pytest.mark.parametrize("defect", DEFECTS, ids=[d.key for d in DEFECTS])
def test_each_kind_is_flagged_by_its_field_as_the_page_says(planted, defect):
    _, by_kind = planted
    rows = by_kind[defect.key]
    _, flagged, passing = _table()[defect.key]
    assert f"{sum(_flagged(r, defect.flagged_by) for r in rows)}/{len(rows)}" == flagged
    assert str(sum(r.metrics["passed"] == 1.0 for r in rows)) == passing


def test_clean_rows_are_flagged_by_nothing(planted):
    clean = planted[1]["clean"]
    assert len(clean) == 89
    assert all(r.metrics["passed"] == 1.0 and not r.warnings for r in clean)
    assert all(r.metrics["grounded"] in (None, 1.0) for r in clean)
    assert sum(r.metrics["grounded"] == 1.0 for r in clean) > 50  # it applies to most of them


def test_off_point_quotes_fail_grounded_alone_with_a_reason_naming_fact_and_quote(planted):
    for row in planted[1]["off-point-quote"]:
        assert row.metrics["quote_valid"] == 1.0 and row.metrics["grounded"] == 0.0 and row.metrics["passed"] == 0.0
        [reason] = [r for r in row.failure_reasons if "in no valid cited quote" in r]
        assert re.fullmatch(r"fact '.+' is in the answer but in no valid cited quote \(valid quotes: '.+'\)", reason)
        assert repr(row.answer.citations[0].quote)[:30] in reason


def test_a_fabricated_quote_before_a_real_one_fails_quote_valid_with_its_own_quote(planted):
    for row in planted[1]["fabricated-before-real"]:
        first, second = row.answer.citations[:2]
        assert first.source_id == second.source_id and first.quote != second.quote
        assert (first.valid, second.valid) == (False, True) and row.answer.status == "invalid_citation"


@pytest.mark.parametrize("kind, warning", [(d.key, d.flagged_by.removeprefix("warnings: ")) for d in DEFECTS
                                           if d.flagged_by.startswith("warnings: ")])
def test_each_reviewer_warning_is_counted_in_the_summary_and_shown_in_report_and_export(planted, kind, warning,
                                                                                          capsys):
    run_dir, by_kind = planted
    assert warning in REVIEW_WARNINGS
    rows = [r for group in by_kind.values() for r in group]
    carrying = [r for r in rows if any(w.startswith(warning + ":") for w in r.warnings)]
    assert {r.case_id for r in by_kind[kind]} <= {r.case_id for r in carrying}
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["warnings"][warning] == len(carrying)
    assert main(["report", str(run_dir)]) == 0
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert f"{len(carrying)}/{len(rows)} rows" in page and f"warning: {warning}:" in page
    target = run_dir.parent / f"{kind}.csv"
    assert main(["export", str(run_dir), "--csv", str(target)]) == 0
    with open(target, newline="", encoding="utf-8") as fh:
        exported = {line["case_id"]: line["warnings"] for line in csv.DictReader(fh)}
    assert all(warning + ":" in exported[r.case_id] for r in by_kind[kind])
    capsys.readouterr()


def test_the_printed_summary_names_every_check_passed_reads_and_the_warnings(planted, capsys, tmp_path):
    scored, _ = planted
    # the fixture is re-read from the manifest's inputs: the cases file scored
    cases = json.loads((scored / "manifest.json").read_text(encoding="utf-8"))["inputs"]["saved"][0]["path"]
    assert main(["score", "--cases", cases, "--out", str(tmp_path), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^quote_valid \d\.\d{3}  \(scored \d+, n/a \d+\)$", out, re.MULTILINE)
    assert re.search(r"^grounded \d\.\d{3}  \(scored \d+, n/a \d+\)$", out, re.MULTILINE)
    assert re.search(r"^reviewer warnings \(rows\): empty answer \d+, ", out, re.MULTILINE)
    header = next(line for line in out.splitlines() if line.startswith("case "))
    assert header.split()[-3:] == ["quote", "grounded", "failed"]
    off_point = next(line for line in out.splitlines() if "~off-point-quote " in line)
    assert off_point.split()[-1] == "grounded"  # the column that failed, by name
