"""Reading a run for compare without holding its rows: `harness.runs.read_scores` streams rows.jsonl as
`RowScores` (whole rows only where a judge rated the answer), with read_rows' rules for bad lines, and
`harness.report.columns` turns them into the same columns whether the rows come from a directory or memory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.records import JudgedClaim, Manifest
from harness.report.columns import columns_of_dir, columns_of_run
from harness.runs import LoadedRun, read_rows, read_scores, write_rows
from pdfrag.errors import InputError
from tests.support.rowkit import make_row

METRICS = ["hit@1", "facts", "passed"]


def _rows() -> list:
    judged = (JudgedClaim(claim="It is so.", verdict="supported", by="judge", judge="judge:m@1"),)
    return [make_row("c1", {"hit@1": 1.0, "facts": 0.5, "passed": 0.0}, tags=["dev"]),
            make_row("c2", {"hit@1": 0.0, "facts": None, "passed": 0.0}, reviewed=True),
            make_row("c2", {"hit@1": 1.0, "facts": 1.0, "passed": 1.0}, repeat=1).model_copy(
                update={"judged_claims": judged}),
            make_row("c3", {}, error="timeout")]


def _run_dir(tmp_path, rows):
    folder = tmp_path / "run"
    folder.mkdir()
    write_rows(folder, rows)
    return folder


def test_read_scores_streams_what_read_rows_reads(tmp_path):
    folder = _run_dir(tmp_path, _rows())
    streamed = list(read_scores(folder))
    rows = read_rows(folder)
    assert [(s.case_id, s.repeat) for s, _ in streamed] == [r.key for r in rows]
    assert [(s.tags, s.error, s.human_claim_review, s.metrics) for s, _ in streamed] == \
        [(r.tags, r.error, r.human_claim_review, r.metrics) for r in rows]
    assert [whole for _, whole in streamed] == [None, None, rows[2], None]  # whole only where a judge rated it


def test_a_last_line_cut_short_is_ignored_and_any_other_bad_line_is_named(tmp_path):
    folder = _run_dir(tmp_path, _rows())
    path = folder / "rows.jsonl"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + text.splitlines()[0][:40], encoding="utf-8")  # a crash mid-write
    assert len(list(read_scores(folder))) == 4
    lines = text.splitlines()
    path.write_text("\n".join([lines[0], lines[1][:40], *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"rows.jsonl:2: not a result row"):
        list(read_scores(folder))
    path.write_text(lines[0].replace('"hit@1":1.0', '"hit@1":"high"') + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"rows.jsonl:1: not a result row \(metrics.hit@1"):
        list(read_scores(folder))


@pytest.mark.parametrize("old, new, field", [
    ('"format":1', '"format":2', "format"),  # another row format: refused, as Row refuses it
    ('"hit@1":1.0', '"hit@1":1e999', "metrics.hit@1"),  # not a finite number: never stored, never read
])
def test_a_row_compare_cannot_read_is_refused_naming_its_field(tmp_path, old, new, field):
    folder = _run_dir(tmp_path, _rows()[:1])
    path = folder / "rows.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    with pytest.raises(InputError, match=rf"rows.jsonl:1: not a result row \({field}"):
        list(read_scores(folder))


def test_a_link_in_place_of_the_rows_is_not_read(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (tmp_path / "elsewhere.jsonl").write_text("", encoding="utf-8")
    (folder / "rows.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(InputError, match="symbolic link"):
        list(read_scores(folder))


@pytest.mark.parametrize("passed_judged", [None, False])
def test_columns_from_a_directory_equal_those_from_memory(tmp_path, passed_judged):
    rows = _rows()
    manifest = Manifest(run_id="r", metrics=METRICS)
    folder = _run_dir(tmp_path, rows)
    streamed = columns_of_dir(folder, manifest, (), METRICS, passed_judged=passed_judged)
    held = columns_of_run(LoadedRun("run", folder, tuple(rows), manifest), METRICS, passed_judged=passed_judged)
    for got in (streamed, held):
        assert got.keys == (("c1", 0), ("c2", 0), ("c2", 1), ("c3", 0))
        assert got.errored.tolist() == [False, False, False, True]
        assert got.reviewed.tolist() == [False, True, False, False]
        assert got.tags == (("dev",), (), (), ())
        assert [got.judged_rows[0].key] == [("c2", 1)]
        facts = got.values["facts"]
        assert (facts[0], facts[2]) == (0.5, 1.0) and math.isnan(facts[1])  # null: NaN in the column
        assert math.isnan(facts[3])  # no value on an error row
        primary = got.errored_values("passed", primary=True)
        assert primary[3] == 0.0 and math.isnan(got.errored_values("facts", primary=False)[3])
    for name in METRICS:
        assert np.array_equal(streamed.values[name], held.values[name], equal_nan=True)
    # recomputed from the people's claim_support (the rows hold none, so every check present passes: 1.0)
    expected = [0.0, 0.0, 1.0] if passed_judged is None else [1.0, 1.0, 1.0]
    assert streamed.values["passed"][:3].tolist() == expected
