"""`--judged-passed`: a judge must earn its say over `passed`, in run, compare and sweep. Over the whole bundle's
offline run (enough one-claim answers for 60 shared claims), with the scripted judge rule: a claim the script does
not name is "supported" (quoting the sentence it came from), a named one "unsupported", so every kappa below is
worked out by hand from the script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness import metrics as m
from harness.cli import main
from harness.errors import EXIT_JUDGE_REFUSED
from harness.evaluate import run_evaluation
from harness.judged import judge_refusal, judge_standing
from harness.records import JudgedClaim
from harness.review.rescore import rescore_run
from harness.runs import read_json, read_manifest, read_rows
from harness.settings import RunSettings
from tests.judge.test_agreement import human_reviews, one_claim_rows
from tests.judge.test_judge import JUDGE, PROMPT_SHA, judge
from tests.support.judge_rules import judge_rule
from tests.support.rowkit import make_row

SAMPLE = Path(__file__).resolve().parents[2] / "sample_docs"
S, U = "supported", "unsupported"
# 60 shared claims, people 30 S / 30 U; the judge agrees on 54 (3 of each the other way): p_o = 0.9, p_e = 0.5,
# kappa = 0.8; its bootstrap interval (seed 0, 10,000 resamples, as summary.json draws it) is [0.633, 0.933]
EARNS = ([S] * 30 + [U] * 30, [U] * 3 + [S] * 27 + [S] * 3 + [U] * 27)
# 40 shared claims, people 20 S / 20 U; the judge says S on half of each: p_o = p_e = 0.5, kappa = 0 [-0.3, 0.3]
FAILS = ([S] * 20 + [U] * 20, [S] * 10 + [U] * 10 + [S] * 10 + [U] * 10)


def _run(tmp_path: Path, label: str, folder: str = "", **extra) -> Path:
    """The offline baseline over the whole bundle, its cases file (and so its reviews file) in `folder`."""
    cases = tmp_path / folder / "cases.jsonl"
    cases.parent.mkdir(exist_ok=True)
    shutil.copy(SAMPLE / "all_cases.jsonl", cases)
    settings = RunSettings(system="offline", out=str(tmp_path / "runs"), label=label, cases=str(cases), **extra)
    return run_evaluation(settings).run_dir


@pytest.fixture
def bundle_run(tmp_path) -> Path:
    return _run(tmp_path, "all", judged_passed=True)


def calibrate(run: Path, server, people: list[str], judged: list[str]) -> None:
    """People rate the one claim of the first len(people) one-claim answers; the judge rates those claims as
    `judged` says, and every other answer by the rule ("supported")."""
    rows = one_claim_rows(run)[:len(people)]
    server.chat_rule = judge_rule({r.answer.model_answer.strip(): (U, "") for r, v in zip(rows, judged) if v == U})
    human_reviews(run, people)
    assert judge(run, server) == 0


def test_a_judge_with_kappa_08_over_60_claims_earns_its_say(bundle_run, server, capsys):
    calibrate(bundle_run, server, *EARNS)
    summary = read_json(bundle_run / "summary.json")
    standing = summary["judged_passed"]
    assert standing["applied"] is True and standing["refusal"] is None
    assert (standing["shared_claims"], standing["kappa"]) == (60, pytest.approx(0.8))
    assert standing["interval"] == pytest.approx([0.633, 0.933], abs=0.001) and standing["min_kappa"] == 0.6
    assert standing["prompt_sha256"] == PROMPT_SHA
    for row in read_rows(bundle_run):  # the run asked for it, and the judge earned it: passed is the judged one
        if not row.errored:
            assert row.metrics["passed"] == m.passed_of(row.metrics, judged=True)
    judged_passes = summary["passes"]
    assert judged_passes < sum(m.passed_of(r.metrics) for r in read_rows(bundle_run) if not r.errored)
    capsys.readouterr()
    assert main(["compare", str(bundle_run), str(bundle_run), "--resamples", "50", "--judged-passed"]) == 0
    out = capsys.readouterr().out
    assert "--judged-passed: `passed` reads claim_support_judged in A and B (floor: kappa's lower bound >= 0.6 " \
           "over >= 30 shared claims); A: judge " in out
    assert f"judge {JUDGE} (prompt {PROMPT_SHA[:12]}): kappa 0.800 [0.633, 0.933] over 60 shared claims" in out
    rescored = rescore_run(bundle_run, read_manifest(bundle_run).settings.to_json()["cases"])  # keeps the run's choice
    assert rescored.summary.passes == judged_passes
    # a higher floor than the judge reaches: refused, nothing compared
    assert main(["compare", str(bundle_run), str(bundle_run), "--judged-passed", "--min-judge-kappa", "0.7"]) == 6
    out, err = capsys.readouterr()
    assert not out and "refused: kappa's lower bound 0.633 is below the floor 0.7" in err


def test_a_judge_with_kappa_0_over_40_claims_is_refused_with_its_numbers(bundle_run, server, tmp_path, capsys):
    calibrate(bundle_run, server, *FAILS)
    summary = read_json(bundle_run / "summary.json")
    assert summary["judged_passed"]["applied"] is False
    for row in read_rows(bundle_run):  # never the judge's word: the people's `passed`, and summary.json says so
        if not row.errored:
            assert row.metrics["passed"] == m.passed_of(row.metrics)
    capsys.readouterr()
    code = main(["compare", str(bundle_run), str(bundle_run), "--fail-if-worse", "passed", "--judged-passed"])
    out, err = capsys.readouterr()
    assert code == EXIT_JUDGE_REFUSED == 6 and not out
    line = next(x for x in err.splitlines() if x.startswith("  run A:"))
    assert line.startswith(f"  run A: judge {JUDGE} (prompt {PROMPT_SHA[:12]}): kappa 0.000 [")
    assert line.endswith("over 40 shared claims; refused: kappa's lower bound " + line.split("[")[1].split(",")[0]
                         + " is below the floor 0.6")
    assert "at least --min-judge-kappa 0.6 over at least 30 shared claims" in err
    # run: the run is complete with the people's `passed`, and the exit code says the judge was refused
    again = ["run", "--offline", "--cases", read_manifest(bundle_run).settings.to_json()["cases"], "--out",
             str(tmp_path / "runs"), "--label", "again", "--judged-passed"]
    assert main(again) == EXIT_JUDGE_REFUSED
    out, err = capsys.readouterr()
    assert "--judged-passed refused: kappa's lower bound" in out and "`passed` is the people's" in out
    assert "error: --judged-passed refused: the judge has not earned its say" in err
    assert "kappa 0.000 [" in err and "over 40 shared claims" in err


def test_a_judge_that_agreed_on_0_of_40_claims_says_its_interval_says_nothing():
    # Issue #29's judge: every quote invalid, so every verdict "unverified": 0 of 40 agree with people (20 S, 20 U),
    # kappa = (0 - 0) / (1 - 0) = 0, and every bootstrap resample gives 0 (the judge has one verdict).
    rows = []
    for i, person in enumerate([S] * 20 + [U] * 20):
        claim = JudgedClaim(claim=f"Claim {i}.", verdict=person, by="human", judge="judge:m@0",
                            judge_verdict="unverified")
        rows.append(make_row(f"c{i}", {"passed": 1.0}, answer=f"Claim {i}.").model_copy(
            update={"judged_claims": (claim,)}))
    standing = judge_standing(rows, floor=0.6, prompt_sha256="ab" * 32)
    assert (standing.shared, standing.kappa, standing.clears) == (40, 0.0, False)
    refused = judge_refusal([("run A", standing), ("run B", standing)], compared=True)
    assert str(refused).splitlines()[1] == (
        f"  run A: judge judge:m@0 (prompt {'ab' * 6}): kappa 0.000, interval undefined (no variation), over 40 "
        "shared claims; refused: kappa's interval is undefined (no variation in the verdicts)")
    assert standing.to_json()["interval_note"] == "interval undefined (no variation)"


def test_a_run_with_no_judge_is_refused_and_the_same_run_later_earns_it(bundle_run, server, tmp_path, capsys):
    cases = read_manifest(bundle_run).settings.to_json()["cases"]
    again = ["run", "--offline", "--cases", cases, "--out", str(tmp_path / "runs"), "--judged-passed"]
    assert main([*again, "--label", "fresh"]) == EXIT_JUDGE_REFUSED
    assert "  this run: no judge rated these answers; refused: no judge rated these answers" in \
        capsys.readouterr().err
    calibrate(bundle_run, server, *EARNS)  # the judge rates the same answers: a new run picks it up
    assert main([*again, "--label", "later"]) == 0
    (later,) = (p for p in (tmp_path / "runs").iterdir() if p.name.endswith("-later"))
    judge = read_manifest(later).judge
    assert judge is not None
    assert judge.model_dump(by_alias=True, exclude_none=True) == {"reviewer": JUDGE, "from": "reviews file",
                                                                  "prompt_sha256": PROMPT_SHA}
    assert read_json(later / "summary.json")["judged_passed"]["applied"] is True


def test_a_judged_run_against_one_without_a_judge_is_refused(bundle_run, server, tmp_path, capsys):
    calibrate(bundle_run, server, *EARNS)
    plain = _run(tmp_path, "plain", folder="elsewhere")  # another reviews file: no judge rated its answers
    capsys.readouterr()
    assert main(["compare", str(plain), str(bundle_run), "--judged-passed"]) == EXIT_JUDGE_REFUSED
    err = capsys.readouterr().err
    assert "  run A: no judge rated these answers; refused: no judge rated these answers" in err
    assert f"  run B: judge {JUDGE} (prompt {PROMPT_SHA[:12]}): kappa 0.800 [0.633, 0.933] over 60 shared claims; " \
           "clears the floor" in err
    assert f"refused: they are not judged by one judge (name and prompt): run A none; run B {JUDGE} prompt " in err
    # without the flag both runs' `passed` is the people's, also in B, which recorded --judged-passed
    assert main(["compare", str(plain), str(bundle_run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    passed = next(x for x in data["metrics"] if x["metric"] == "passed")
    people = sum(m.passed_of(r.metrics) for r in read_rows(bundle_run) if not r.errored)
    assert data["judge"]["people_passed"] == ["b"] and passed["mean_b"] * passed["n"] == pytest.approx(people)


def test_a_later_run_picks_up_the_judge_for_unchanged_answers(bundle_run, server, tmp_path):
    server.chat_rule = judge_rule()
    assert judge(bundle_run, server) == 0
    again = run_evaluation(RunSettings(system="offline", out=str(tmp_path / "runs"), label="again",
                                       cases=read_manifest(bundle_run).settings.to_json()["cases"])).run_dir
    assert read_manifest(again).judge.to_json() == {"reviewer": JUDGE, "from": "reviews file",
                                                    "prompt_sha256": PROMPT_SHA}
    judged = [r for r in read_rows(again) if r.judged_claims]
    assert judged and all(r.metrics["claims_supported"] is None for r in judged)
    assert read_manifest(again).settings.to_json()["judged_passed"] is False


def test_sweep_records_judged_passed_in_every_cell_and_refuses_an_unearned_judge(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE / "cases.jsonl", cases)
    args = ["sweep", "--grid", "chunk-size=800,2000", "--offline", "--docs", str(SAMPLE / "handbook.pdf"), "--cases",
            str(cases), "--k", "1", "2", "--out", str(tmp_path / "off"), "--judged-passed"]
    assert main(args) == EXIT_JUDGE_REFUSED
    err = capsys.readouterr().err
    (sweep_dir,) = (tmp_path / "off").iterdir()
    for cell in ("chunk-size=800", "chunk-size=2000"):
        assert read_manifest(sweep_dir / cell).settings.to_json()["judged_passed"] is True
        assert f"  cell {cell}: no judge rated these answers; refused: no judge rated these answers" in err
    assert f"then write the leaderboard with: rag-eval sweep --resume {sweep_dir}" in err
    assert not (sweep_dir / "leaderboard.md").exists()  # no leaderboard on the people's `passed` in disguise
    assert main(["sweep", "--resume", str(sweep_dir)]) == EXIT_JUDGE_REFUSED  # the finished cells are kept
