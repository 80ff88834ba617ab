"""Two reviewers on drafted cases: each keeps their own decision, agreement figures shared with claim review, a
disagreement keeps the draft pending (and out of `draft cases`) until resolved, older drafts files still load.

The drafts come from the test server with the scripted rule of tests/support/draft_rules.py
(see tests/drafting/test_draft.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.drafting.records import Decision, read_drafts
from harness.stats.agreement import measure_agreement
from tests.conftest import HANDBOOK
from tests.support import draft_rules as rules

ANN = {"GOOD_HOTEL": ("accepted", ""), "GOOD_LAPTOP": ("accepted", ""), "GOOD_CARRY": ("accepted", ""),
       "GOOD_PASSWORD": ("rejected", "too easy")}
BOB = {"GOOD_HOTEL": ("accepted", ""), "GOOD_LAPTOP": ("rejected", "duplicate of a hand-written case"),
       "GOOD_CARRY": ("accepted", ""), "GOOD_PASSWORD": ("rejected", "answer is on every page")}


def _row(rows: list[dict], name: str) -> dict:
    return rules.find_row(rows, getattr(rules, name))


def _review_by(drafts_file: Path, tmp_path: Path, reviewer: str, decisions: dict[str, tuple[str, str]]) -> None:
    """`reviewer` exports a sheet, fills in `decisions` and imports it (the reviewer column names them)."""
    sheet = tmp_path / f"{reviewer}.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet), "--reviewer", reviewer]) == 0
    rows = rules.csv_rows(sheet)
    assert all(r["reviewer"] == reviewer for r in rows)
    for name, (status, reason) in decisions.items():
        _row(rows, name).update(decision=status, reason=reason)
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet)]) == 0


def _by_question(drafts_file: Path) -> dict:
    return {d.question: d for d in read_drafts(drafts_file)}


def _cases(drafts_file: Path, tmp_path: Path, *extra: str) -> list[str]:
    out = tmp_path / "cases.jsonl"
    assert main(["draft", "cases", str(drafts_file), "--out", str(out), *extra]) == 0
    return sorted(json.loads(line)["question"] for line in out.read_text().splitlines())


def test_two_csv_reviewers_agreement_figures_and_the_disagreement(drafts_file, tmp_path, capsys):
    """Hand-worked: 4 drafts seen by both; they agree on 3 (hotel, carry accepted; password rejected), so percent
    agreement = 3/4 = 0.75. Ann accepts 3/4 and rejects 1/4, Bob accepts 2/4 and rejects 2/4, so chance agreement
    p_e = 3/4 * 2/4 + 1/4 * 2/4 = 1/2 and Cohen's kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5."""
    _review_by(drafts_file, tmp_path, "ann", ANN)
    _review_by(drafts_file, tmp_path, "bob", BOB)
    drafts = _by_question(drafts_file)
    laptop = drafts[rules.GOOD_LAPTOP["question"]]
    assert [(r.by, r.status) for r in laptop.reviews] == [("ann", "accepted"), ("bob", "rejected")]
    assert laptop.decision.status == "pending" and laptop.in_disagreement
    assert drafts[rules.GOOD_HOTEL["question"]].decision.status == "accepted"
    password = next(d for d in read_drafts(drafts_file) if d.quote == rules.GOOD_PASSWORD["quote"])
    assert password.decision.status == "rejected"
    assert password.decision.reason == "too easy / answer is on every page"
    capsys.readouterr()

    assert main(["draft", "review", str(drafts_file), "--agreement", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["drafts"] == 4 and report["reviewers"] == ["ann", "bob"]
    assert report["percent_agreement"] == pytest.approx(0.75) and report["kappa"] == pytest.approx(0.5)
    assert report["undefined_reason"] is None and "alpha" not in report
    assert set(report) == {"drafts", "reviewers", "percent_agreement", "percent_agreement_interval", "kappa",
                           "interval", "undefined_reason", "disagreements"}
    [disagreement] = report["disagreements"]
    assert disagreement["question"] == rules.GOOD_LAPTOP["question"] and disagreement["status"] == "disagreement"
    assert [(d["reviewer"], d["decision"], d["reason"]) for d in disagreement["decisions"]] == [
        ("ann", "accepted", None), ("bob", "rejected", "duplicate of a hand-written case")]
    # The same statistics code as claim review, fed the same verdicts.
    same = measure_agreement([{"ann": a[0], "bob": b[0]} for a, b in zip(ANN.values(), BOB.values())])
    assert (same.percent_agreement, same.value) == (report["percent_agreement"], report["kappa"])

    assert main(["draft", "review", str(drafts_file), "--agreement"]) == 0
    text = capsys.readouterr().out
    assert "drafts seen by two or more reviewers: 4 (reviewers: ann, bob)" in text
    assert "percent agreement: 0.750" in text and "Cohen's kappa: 0.500" in text
    assert "disagreements: 1 (1 open, 0 resolved)" in text
    assert "    bob: rejected (duplicate of a hand-written case)" in text


def test_a_disagreement_stays_out_of_cases_until_resolved_in_the_terminal(drafts_file, tmp_path, monkeypatch,
                                                                          capsys):
    _review_by(drafts_file, tmp_path, "ann", ANN)
    _review_by(drafts_file, tmp_path, "bob", BOB)
    agreed = sorted([rules.GOOD_HOTEL["question"], rules.GOOD_CARRY["question"]])
    assert _cases(drafts_file, tmp_path) == agreed
    assert "1 reviewers disagree" in capsys.readouterr().out
    assert _cases(drafts_file, tmp_path, "--include-unreviewed") == sorted(
        agreed + [d.question for d in read_drafts(drafts_file)
                  if d.kind != "error" and d.verification.passed and not d.reviews])  # never the disputed one

    answers = iter(["x", "a"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    assert main(["draft", "review", str(drafts_file), "--resolve", "--reviewer", "carol"]) == 0
    out = capsys.readouterr().out
    assert "1 draft(s) on which reviewers disagree" in out
    assert "decision: ann: accepted" in out and "decision: bob: rejected (duplicate of a hand-written case)" in out
    assert "unknown command 'x'" in out and "resolved: accepted" in out
    laptop = _by_question(drafts_file)[rules.GOOD_LAPTOP["question"]]
    assert laptop.resolution == Decision("accepted", None, "carol", laptop.resolution.at)
    assert laptop.decision.status == "accepted" and len(laptop.reviews) == 2  # both decisions kept
    assert _cases(drafts_file, tmp_path) == sorted(agreed + [rules.GOOD_LAPTOP["question"]])
    case = next(json.loads(line) for line in (tmp_path / "cases.jsonl").read_text().splitlines()
                if json.loads(line)["question"] == rules.GOOD_LAPTOP["question"])
    assert "reviewers disagreed (ann accepted, bob rejected); resolved accepted by carol" in case["notes"]
    capsys.readouterr()
    assert main(["draft", "review", str(drafts_file), "--agreement", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kappa"] == pytest.approx(0.5)  # a resolution settles the draft; it does not change agreement
    assert report["disagreements"][0]["status"] == "resolved"
    assert report["disagreements"][0]["resolution"]["by"] == "carol"


def test_csv_resolution_column_and_its_problems(drafts_file, tmp_path, capsys):
    _review_by(drafts_file, tmp_path, "ann", ANN)
    _review_by(drafts_file, tmp_path, "bob", BOB)
    sheet = tmp_path / "carol.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet), "--reviewer", "carol"]) == 0
    rows = rules.csv_rows(sheet)
    assert all(r["decision"] == "" and r["resolution"] == "" for r in rows)  # carol decided nothing yet
    _row(rows, "GOOD_HOTEL")["resolution"] = "rejected"  # the reviewers agree: nothing to resolve
    _row(rows, "GOOD_CARRY").update(decision="accepted", resolution="accepted")
    _row(rows, "GOOD_LAPTOP")["resolution"] = "rejected"  # no reason
    rules.write_csv(sheet, rows)
    before = drafts_file.read_text()
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet)]) == 2
    err = capsys.readouterr().err
    assert "3 problem(s)" in err and "nothing to resolve" in err and "not both" in err and "needs a reason" in err
    assert drafts_file.read_text() == before

    for r in rows:
        r.update(decision="", resolution="", reason="")
    _row(rows, "GOOD_LAPTOP").update(resolution="rejected", reason="duplicate after all")
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "dave"]) == 2
    assert "the sheet says 'carol' but --reviewer says 'dave'" in capsys.readouterr().err
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet)]) == 0
    laptop = _by_question(drafts_file)[rules.GOOD_LAPTOP["question"]]
    assert (laptop.decision.status, laptop.decision.reason, laptop.decision.by) == (
        "rejected", "duplicate after all", "carol")
    assert rules.GOOD_LAPTOP["question"] not in _cases(drafts_file, tmp_path)


def test_reviewing_again_replaces_only_your_own_decision(drafts_file, tmp_path):
    _review_by(drafts_file, tmp_path, "ann", ANN)
    _review_by(drafts_file, tmp_path, "bob", BOB)
    _review_by(drafts_file, tmp_path, "bob", {"GOOD_LAPTOP": ("accepted", "")})
    laptop = _by_question(drafts_file)[rules.GOOD_LAPTOP["question"]]
    assert [(r.by, r.status) for r in laptop.reviews] == [("ann", "accepted"), ("bob", "accepted")]
    assert laptop.decision.status == "accepted" and laptop.decision.by == "ann, bob"
    sheet = tmp_path / "bob.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet), "--reviewer", "bob"]) == 0
    assert _row(rules.csv_rows(sheet), "GOOD_PASSWORD")["reason"] == "answer is on every page"  # bob's own, not ann's


def test_an_edit_is_the_editors_acceptance(drafts_file, tmp_path, capsys):
    new_question = "Until when can leave from the previous year still be taken?"
    sheet = tmp_path / "ann.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet), "--reviewer", "ann"]) == 0
    rows = rules.csv_rows(sheet)
    _row(rows, "GOOD_CARRY").update(decision="accepted", question=new_question)
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet)]) == 0
    _review_by(drafts_file, tmp_path, "bob", {})
    sheet = tmp_path / "bob.csv"
    rows = rules.csv_rows(sheet)
    next(r for r in rows if r["question"] == new_question).update(decision="rejected", reason="still vague")
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet)]) == 0
    capsys.readouterr()
    assert main(["draft", "review", str(drafts_file), "--agreement", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["drafts"] == 1 and report["percent_agreement"] == 0.0
    decisions = report["disagreements"][0]["decisions"]
    assert [(d["reviewer"], d["decision"], d["edited"]) for d in decisions] == [
        ("ann", "accepted", True), ("bob", "rejected", False)]


def test_a_drafts_file_from_before_reviewers_were_kept_apart_loads(drafts_file, tmp_path):
    """Lines written by the single-decision layout: no `reviews`, no `resolution`, one `decision`."""
    lines = [json.loads(line) for line in drafts_file.read_text().splitlines()]
    for n, line in enumerate(lines):
        del line["reviews"], line["resolution"]
        if n == 0:
            line["decision"] = {"status": "accepted", "reason": None, "by": "ann", "at": "2026-01-02T00:00:00+00:00"}
        elif n == 1:
            line["decision"] = {"status": "rejected", "reason": "too easy", "by": "ann", "at": None}
        else:
            line["decision"] = {"status": "pending", "reason": None, "by": None, "at": None}
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    drafts = read_drafts(old)
    assert drafts[0].reviews == (Decision("accepted", None, "ann", "2026-01-02T00:00:00+00:00"),)
    assert drafts[0].decision == drafts[0].reviews[0]
    assert drafts[1].decision.reason == "too easy" and all(not d.reviews for d in drafts[2:])
    assert main(["draft", "review", str(old), "--agreement", "--json"]) == 0  # one reviewer: nothing to measure


def test_a_rerun_keeps_every_reviewers_decision_and_the_resolution(drafts_file, server, tmp_path):
    _review_by(drafts_file, tmp_path, "ann", ANN)
    _review_by(drafts_file, tmp_path, "bob", BOB)
    sheet = tmp_path / "carol.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet), "--reviewer", "carol"]) == 0
    rows = rules.csv_rows(sheet)
    _row(rows, "GOOD_LAPTOP")["resolution"] = "accepted"
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet)]) == 0
    before = {d.draft_id: (d.reviews, d.resolution) for d in read_drafts(drafts_file)}
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(drafts_file), "--host", server.url,
                 "--unanswerable", "0"]) == 0  # the fixture's command again
    assert {d.draft_id: (d.reviews, d.resolution) for d in read_drafts(drafts_file)} == before
    assert _by_question(drafts_file)[rules.GOOD_LAPTOP["question"]].decision.by == "carol"
