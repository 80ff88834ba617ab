"""`--judged-passed` and a measured judge, over the whole bundle's offline run (enough answers for 30 shared
claims): `passed` reads claim_support_judged only once the judge is measured, in run, compare and sweep."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import metrics as m
from harness.cli import main
from harness.evaluate import run_evaluation
from harness.review.rescore import rescore_run
from harness.runs import read_json, read_manifest, read_rows
from harness.settings import RunSettings
from tests.judge.test_agreement import human_reviews, one_claim_rows
from tests.judge.test_judge import JUDGE, judge
from tests.support.judge_rules import judge_rule

SAMPLE = Path(__file__).resolve().parents[2] / "sample_docs"


@pytest.fixture
def bundle_run(tmp_path) -> Path:
    cases = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE / "all_cases.jsonl", cases)
    settings = RunSettings(system="offline", out=str(tmp_path / "runs"), label="all", cases=str(cases),
                           judged_passed=True)
    return run_evaluation(settings).run_dir


def test_a_measured_judge_switches_passed_only_with_the_flag(bundle_run, server, capsys):
    rows = one_claim_rows(bundle_run)
    claims = {r.answer.model_answer.strip() for r in rows[30:60]}  # not among the 30 people review
    server.chat_rule = judge_rule({c: ("unsupported", "") for c in claims})
    human_reviews(bundle_run, ["supported"] * 28 + ["unsupported"] * 2)
    assert judge(bundle_run, server) == 0
    summary = read_json(bundle_run / "summary.json")
    assert read_manifest(bundle_run).settings.to_json()["judged_passed"] is True
    assert summary["judge"]["measured"] is True and summary["judge"]["shared_claims"] == 30
    assert summary["judge"]["text"].startswith(f"judge {JUDGE}: kappa ")
    for row in read_rows(bundle_run):  # the run asked for it, and the judge is measured: passed is the judged one
        if not row.errored:
            assert row.metrics["passed"] == m.passed_of(row.metrics, judged=True)
    judged_passes = summary["passes"]
    human_passes = sum(m.passed_of(r.metrics) for r in read_rows(bundle_run) if not r.errored)
    assert judged_passes < human_passes  # the judge's "unsupported" answers no longer pass
    capsys.readouterr()
    assert main(["compare", str(bundle_run), str(bundle_run), "--resamples", "50", "--judged-passed"]) == 0
    assert "`passed` reads claim_support_judged in A and B" in capsys.readouterr().out
    rescored = rescore_run(bundle_run, read_manifest(bundle_run).settings.to_json()["cases"])  # keeps the run's choice
    assert rescored.summary.passes == judged_passes


def test_a_later_run_picks_up_the_judge_for_unchanged_answers(bundle_run, server, tmp_path):
    server.chat_rule = judge_rule()
    assert judge(bundle_run, server) == 0
    again = run_evaluation(RunSettings(system="offline", out=str(tmp_path / "runs"), label="again",
                                       cases=read_manifest(bundle_run).settings.to_json()["cases"])).run_dir
    assert read_manifest(again).judge.to_json() == {"reviewer": JUDGE, "from": "reviews file"}
    judged = [r for r in read_rows(again) if r.judged_claims]
    assert judged and all(r.metrics["claims_supported"] is None for r in judged)
    assert read_manifest(again).settings.to_json()["judged_passed"] is False


def test_sweep_records_judged_passed_in_every_cell(tmp_path):
    cases = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE / "cases.jsonl", cases)
    args = ["sweep", "--grid", "chunk-size=800,2000", "--offline", "--docs", str(SAMPLE / "handbook.pdf"), "--cases",
            str(cases), "--k", "1", "2", "--out", str(tmp_path / "off"), "--judged-passed"]
    assert main(args) == 0
    (sweep_dir,) = (tmp_path / "off").iterdir()
    for cell in ("chunk-size=800", "chunk-size=2000"):
        assert read_manifest(sweep_dir / cell).settings.to_json()["judged_passed"] is True
    # `passed` is the primary metric and may read judged verdicts: the leaderboard says where each cell's judge is
    board = (sweep_dir / "leaderboard.md").read_text(encoding="utf-8")
    assert "- judge of chunk-size=800: no judge rated these answers" in board
