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
from harness.judged.standing import judge_refusal, judge_standing
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
# kappa = 0.8; its analytic interval (Fleiss, Cohen and Everitt: var = (0.576 + 0.004 - 0.49) / (60 * 0.25) = 0.006)
# is 0.8 +- 1.96 * 0.0775 = [0.648, 0.952]; recall 27/30 of each verdict, Wilson lower bound 0.744
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
    assert standing["interval"] == pytest.approx([0.648, 0.952], abs=0.001) and standing["min_kappa"] == 0.6
    assert standing["prompt_sha256"] == PROMPT_SHA
    for row in read_rows(bundle_run):  # the run asked for it, and the judge earned it: passed is the judged one
        if not row.errored:
            assert row.metrics["passed"] == m.passed_of(row.metrics, judged=True)
    judged_passes = summary["passes"]
    assert judged_passes < sum(m.passed_of(r.metrics) for r in read_rows(bundle_run) if not r.errored)
    capsys.readouterr()
    assert main(["compare", str(bundle_run), str(bundle_run), "--resamples", "50", "--judged-passed"]) == 0
    out = capsys.readouterr().out
    assert "--judged-passed: `passed` reads claim_support_judged in A and B (floor: kappa's analytic lower bound " \
           ">= 0.6 over >= 30 shared claims, people's supported and unsupported >= 10 each, the judge's recall of " \
           "each >= 0.7 at its Wilson lower bound); A: judge " in out
    assert f"judge {JUDGE} (prompt {PROMPT_SHA[:12]}): kappa 0.800 [0.648, 0.952] over 60 shared claims; recall " \
           "supported 27/30 (>= 0.744), unsupported 27/30 (>= 0.744)" in out
    rescored = rescore_run(bundle_run, read_manifest(bundle_run).settings.to_json()["cases"])  # keeps the run's choice
    assert rescored.summary.passes == judged_passes
    # a higher floor than the judge reaches: refused, nothing compared
    assert main(["compare", str(bundle_run), str(bundle_run), "--judged-passed", "--min-judge-kappa", "0.7"]) == 6
    out, err = capsys.readouterr()
    assert not out and "refused: kappa's lower bound 0.648 is below the floor 0.7" in err


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
    # p_o = p_e = 0.5: var = (2 * 0.25 * 0 + 1 * 2 * 0.25 * 1 - 0.25) / (40 * 0.25), se 0.158: [-0.310, 0.310];
    # the judge finds 10 of each 20: Wilson lower bound 0.299
    assert line.endswith("kappa 0.000 [-0.310, 0.310] over 40 shared claims; recall supported 10/20 (>= 0.299), "
                         "unsupported 10/20 (>= 0.299); refused: kappa's lower bound -0.310 is below the floor 0.6; "
                         "the judge finds 10 of the 20 claims people called supported: its recall's lower bound "
                         "0.299 is below 0.7; the judge finds 10 of the 20 claims people called unsupported (or "
                         "contradicted): its recall's lower bound 0.299 is below 0.7")
    assert "is at least --min-judge-kappa 0.6, the Wilson lower bound of its recall of each of the two is at least " \
           "0.7" in err
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
    # kappa = (0 - 0) / (1 - 0) = 0, and its analytic variance is 0 (the judge has one verdict): undefined, not
    # [0, 0]; it finds none of either verdict.
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
        f"  run A: judge judge:m@0 (prompt {'ab' * 6}): kappa 0.000, interval undefined (one verdict throughout), "
        "over 40 shared claims; recall supported 0/20 (>= 0.000), unsupported 0/20 (>= 0.000); refused: kappa's "
        "interval is undefined: people or the judge gave one verdict throughout; the judge finds 0 of the 20 claims "
        "people called supported: its recall's lower bound 0.000 is below 0.7; the judge finds 0 of the 20 claims "
        "people called unsupported (or contradicted): its recall's lower bound 0.000 is below 0.7")
    assert standing.to_json()["interval"] == [None, None]


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
    assert f"  run B: judge {JUDGE} (prompt {PROMPT_SHA[:12]}): kappa 0.800 [0.648, 0.952] over 60 shared claims; " \
           "recall supported 27/30 (>= 0.744), unsupported 27/30 (>= 0.744); clears the floor" in err
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


def _standing(people: list[str], judged: list[str], floor: float = 0.6):
    rows = [make_row(f"c{i}", {"passed": 1.0}, answer=f"Claim {i}.").model_copy(update={"judged_claims": (
        JudgedClaim(claim=f"Claim {i}.", verdict=p, by="human", judge="judge:m@0", judge_verdict=j),)})
        for i, (p, j) in enumerate(zip(people, judged))]
    return judge_standing(rows, floor=floor, prompt_sha256="ab" * 32)


@pytest.mark.parametrize(("unsupported", "shared"), [(1, 30), (2, 40)])
def test_perfect_agreement_on_one_or_two_unsupported_claims_is_refused_naming_the_verdict(unsupported, shared):
    # Issue 41: kappa's bootstrap interval was [1.000, 1.000] here, and the judge cleared 0.6 on one "unsupported".
    people = [S] * (shared - unsupported) + [U] * unsupported
    standing = _standing(people, people)
    assert standing.kappa == 1.0 and not standing.clears
    assert standing.refusal == (f"people called {unsupported} shared claim{'s' if unsupported > 1 else ''} "
                                f"unsupported (or contradicted), 10 needed: review at least {10 - unsupported} more "
                                "unsupported claims")


def test_perfect_agreement_on_60_claims_20_unsupported_is_used_and_the_decision_is_deterministic():
    # kappa 1 with an interval of width 0 (analytic, p_o = 1), but recall 40/40 and 20/20: Wilson lower bounds
    # 0.912 and 0.839, above 0.7. Contradicted counts as unsupported.
    people = [S] * 40 + [U] * 15 + ["contradicted"] * 5
    standing = _standing(people, people)
    assert standing.clears and (standing.kappa, standing.low, standing.high) == (1.0, 1.0, 1.0)
    assert [(v.verdict, v.people, v.found, round(v.recall_low, 3)) for v in standing.verdicts] == [
        ("supported", 40, 40, 0.912), ("unsupported", 20, 20, 0.839)]
    assert _standing(people, people) == standing


def test_ten_of_each_verdict_is_enough_for_a_perfect_judge_and_seven_of_ten_is_not():
    # 10 of 10: Wilson lower bound 0.722 >= 0.7; 7 of 10 (the judge says "unverified" on 3): 0.397
    people = [S] * 20 + [U] * 10
    assert _standing(people, people).clears
    judged = [S] * 20 + [U] * 7 + ["unverified"] * 3
    standing = _standing(people, judged)
    assert not standing.clears and ("the judge finds 7 of the 10 claims people called unsupported (or "
                                    "contradicted): its recall's lower bound 0.397 is below 0.7") in standing.refusal


def test_compare_refuses_a_judge_checked_on_one_unsupported_claim_with_exit_6(bundle_run, server, capsys):
    people = [S] * 29 + [U]
    calibrate(bundle_run, server, people, people)
    capsys.readouterr()
    assert main(["compare", str(bundle_run), str(bundle_run), "--judged-passed"]) == EXIT_JUDGE_REFUSED
    out, err = capsys.readouterr()
    assert not out and "kappa 1.000 [1.000, 1.000] over 30 shared claims" in err
    assert ("refused: people called 1 shared claim unsupported (or contradicted), 10 needed: review at least 9 more "
            "unsupported claims") in err
