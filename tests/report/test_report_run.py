"""The report reads a run directory as `ReportRun` (every row as a light `ReportRow`, whole rows only for the cases
its tables show): the page is the same as from the run's whole rows, and a bad line is named as read_rows names it."""

from __future__ import annotations

import shutil

import pytest

from harness.cli import main
from harness.records import JudgedClaim
from harness.report.html import render_report
from harness.report.report_run import read_report_run
from harness.runs import load_run, read_rows, write_rows
from pdfrag.errors import InputError
from tests.conftest import SAMPLE_DOCS
from tests.support.rowkit import make_row


@pytest.fixture(scope="module")
def workshop(tmp_path_factory):
    """The workshop scored twice (claims, chunks; the second run with a judge's claims on one row and an error on
    another), so that the page has failing and passing cases, reviewed claims and a judged row."""
    out = tmp_path_factory.mktemp("workshop")
    assert main(["score", "--cases", str(SAMPLE_DOCS / "workshop" / "cases.csv"), "--out", str(out / "a")]) == 0
    assert main(["score", "--cases", str(SAMPLE_DOCS / "workshop" / "cases.csv"), "--out", str(out / "b")]) == 0
    [a] = [p for p in (out / "a").iterdir() if p.is_dir()]
    [b] = [p for p in (out / "b").iterdir() if p.is_dir()]
    rows = read_rows(b)
    judged = (JudgedClaim(claim="It is so.", verdict="supported", by="judge", judge="judge:m@1"),)
    rows[1] = rows[1].model_copy(update={"judged_claims": judged})
    rows[2] = rows[2].model_copy(update={"error": "timeout", "metrics": {}})
    write_rows(b, rows)
    return a, b


@pytest.mark.parametrize("limit", [200, 3])
def test_the_report_of_a_run_directory_is_the_report_of_its_whole_rows(workshop, limit):
    a, b = workshop
    assert render_report(read_report_run(a), limit=limit) == render_report(load_run(a), limit=limit)
    streamed = render_report(read_report_run(b), vs=read_report_run(a), limit=limit)
    assert streamed == render_report(load_run(b), vs=load_run(a), limit=limit)
    assert "claim review: reviewed" in streamed and ("error: timeout" in streamed) == (limit >= 10)  # all shown


def test_only_the_shown_cases_are_read_whole(workshop):
    a, _ = workshop
    run = read_report_run(a)
    assert len(run.rows) == 10 and not hasattr(run.rows[0], "retrieved")
    whole = run.whole_rows({run.rows[3].key, ("no such case", 0)})
    assert list(whole) == [run.rows[3].key] and whole[run.rows[3].key] == read_rows(a)[3]


def test_a_bad_line_is_named_and_a_last_line_cut_short_is_ignored(tmp_path, workshop):
    a, _ = workshop
    path = a / "rows.jsonl"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    try:
        path.write_text(text + lines[0][:40], encoding="utf-8")  # a crash mid-write
        assert len(read_report_run(a).rows) == 10
        path.write_text("\n".join([lines[0], lines[1].replace('"tags":[', '"tags":7,"x":['), *lines[2:]]) + "\n",
                        encoding="utf-8")
        with pytest.raises(InputError, match=r"rows.jsonl:2: not a result row \(tags"):
            read_report_run(a)
        # a field the light rows skip is checked when its row is read whole, with the same line number
        path.write_text("\n".join([lines[0], "", lines[1].replace('"rank":1,', '"rank":0,'), *lines[2:]]) + "\n",
                        encoding="utf-8")
        run = read_report_run(a)
        with pytest.raises(InputError, match=r"rows.jsonl:3: not a result row \(retrieved.0.rank"):
            run.whole_rows({run.rows[1].key})
    finally:
        path.write_text(text, encoding="utf-8")


def test_rows_share_the_metrics_they_repeat(tmp_path, workshop):
    folder = tmp_path / "run"
    folder.mkdir()
    write_rows(folder, [make_row("c1", {"hit@1": 1.0}), make_row("c2", {"hit@1": 1.0}), make_row("c3", {"hit@1": 0.0})])
    shutil.copy(workshop[0] / "manifest.json", folder / "manifest.json")
    one, two, three = read_report_run(folder).rows
    assert one.metrics is two.metrics and three.metrics == {"hit@1": 0.0} and three.metrics is not one.metrics
