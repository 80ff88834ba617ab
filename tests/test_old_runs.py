"""Run directories written by an earlier version still load, compare, report, rescore and apply reviews.

`tests/fixtures/old_runs/` holds three runs written by the code as it stood at commit e8f7cc8, before the manifest
and summary had a format version and typed extra sections: `old-a` (offline, first 10 handbook cases), `old-b`
(chunk size 600, judged by the tests' judge rule, so its manifest has a `judge` section and its rows judged
claims), and `old-a-rescored` (a `rescored_from` section). Paths inside were rewritten to a neutral home folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.records import Summary
from harness.runs import load_run
from tests.conftest import SAMPLE_DOCS

FIXTURES = Path(__file__).parent / "fixtures" / "old_runs"
A, B, RESCORED = "20261201T183316Z-old-a", "20261201T183323Z-old-b", "20261201T183337Z-old-a-rescored"


@pytest.fixture
def old(tmp_path) -> Path:
    """A private copy of the old runs (commands rewrite rows and summaries)."""
    shutil.copytree(FIXTURES, tmp_path / "old")
    return tmp_path / "old"


@pytest.mark.parametrize("name", [A, B, RESCORED])
def test_an_old_run_loads_with_its_sections(old, name):
    run = load_run(old / name)
    summary = Summary.model_validate_json((old / name / "summary.json").read_text(encoding="utf-8"))
    assert len(run.rows) == 10 and run.manifest.status == "complete" and summary.rows == 10
    assert run.manifest.ks == [1, 2, 4]


def test_old_runs_compare_and_the_judged_one_shows_its_judge(old, capsys):
    assert main(["compare", str(old / A), str(old / B), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["cases"] == 10 and result["judge"]["a"] is None
    assert result["judge"]["b"]["reviewer"] == "judge:qwen3:4b@c351ea7c6d3f"
    assert any(d["key"] == "settings.chunk_size" for d in result["manifest_diff"])


def test_old_runs_render_a_report(old, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(old / B), "--vs", str(old / A), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "judge:qwen3:4b@c351ea7c6d3f" in page and "old-a" in page


def test_an_old_run_rescores(old, tmp_path):
    assert main(["rescore", str(old / B), "--cases", str(SAMPLE_DOCS / "cases.jsonl"), "--out", str(tmp_path / "new"),
                 "--label", "again"]) == 0
    (new,) = (tmp_path / "new").iterdir()
    manifest = json.loads((new / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["rescored_from"]["run_id"] == B and len(load_run(new).rows) == 10


def test_reviews_apply_to_an_old_judged_run_with_its_judge(old):
    assert main(["review", str(old / B), "--reviews", str(old / "reviews.jsonl"), "--apply"]) == 0
    rows = load_run(old / B).rows
    assert any(r.judged_claims for r in rows)
    assert {c.judge for r in rows for c in r.judged_claims or ()} == {"judge:qwen3:4b@c351ea7c6d3f"}


def test_compare_and_report_say_the_old_runs_manifest_format(old, tmp_path, capsys):
    assert main(["compare", str(old / A), str(old / B)]) == 0
    err = capsys.readouterr().err
    assert f"note: {old / A / 'manifest.json'}: manifest format 1 (written before format versions)" in err
    assert main(["report", str(old / B), "--out", str(tmp_path / "r.html")]) == 0
    assert "manifest format 1" in capsys.readouterr().err
