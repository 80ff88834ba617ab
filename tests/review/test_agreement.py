"""Two (and three) reviewers through the real command: CSV exports filled in by each reviewer, the agreement
command's numbers, disagreements pending in `claims_supported`, and their resolution by CSV and in the terminal;
then the review screen itself, driven with scripted input."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.review.store import load_reviews
from harness.runs import read_rows
from harness.settings import RunSettings

SAMPLE = Path(__file__).resolve().parents[2] / "sample_docs"
# Verdicts on the 17 claims the offline baseline's sample run makes (one sentence per answered case, in case
# order); S supported, U unsupported, C contradicted. Bob differs from Ann on claims 0, 9 and 14.
ANN = "SSSSSSSSSUUUUUCCC"
BOB = "USSSSSSSSSUUUUUCC"
_WORD = {"S": "supported", "U": "unsupported", "C": "contradicted"}


@pytest.fixture
def run(tmp_path):
    cases = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE / "cases.jsonl", cases)
    settings = RunSettings(system="offline", out=str(tmp_path / "runs"), label="a", docs=str(SAMPLE / "handbook.pdf"),
                           cases=str(cases), chunk_size=1500)
    return run_evaluation(settings).run_dir


def _fill(run: Path, tmp_path: Path, reviewer: str, letters: str, *, extra: str | None = None) -> Path:
    """Export the CSV for `reviewer`, give the n-th claim the n-th letter's verdict and every empty answer
    `none`; `extra` adds one more claim, only this reviewer's, to the last answered case."""
    path = tmp_path / f"{''.join(c if c.isalnum() else '_' for c in reviewer)}.csv"
    assert main(["review", str(run), "--reviewer", reviewer, "--export", str(path)]) == 0
    passage = {r.case_id: r.retrieved[0].source_id for r in read_rows(run)}
    records = list(csv.DictReader(io.StringIO(path.read_text())))
    claims = [r for r in records if r["claim"]]
    assert len(claims) == len(letters) == 17 and all(r["reviewer"] == reviewer for r in records)
    for record, letter in zip(claims, letters):
        record.update(verdict=_WORD[letter], source_id=passage[record["case_id"]] if letter == "S" else "",
                      note=f"{reviewer} read it")
    for record in records:
        if not record["claim"]:
            record["verdict"] = "none"
    if extra:
        records.insert(records.index(claims[-1]) + 1, claims[-1] | {"claim": extra, "verdict": "unsupported",
                                                                   "source_id": ""})
    _write(path, records)
    return path


def _write(path: Path, records: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)


def _agreement(run: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["review", str(run), "--agreement", "--json", "--resamples", "2000"]) == 0
    return json.loads(capsys.readouterr().out)


def _claims_summary(run: Path) -> tuple[dict, dict, dict]:
    summary = json.loads((run / "summary.json").read_text())
    return summary["human_claim_review"], summary["metrics"]["claims_supported"], summary["claims"]


def test_two_reviewers_agreement_pending_disagreements_and_csv_resolution(run, tmp_path, capsys):
    """Hand-worked figures for ANN against BOB (17 claims both rated; bob's extra claim is seen by one):
    equal on 14, so p_o = 14/17. Ann: S 9, U 5, C 3; Bob: S 9, U 6, C 2.
    p_e = (9*9 + 5*6 + 3*2) / 17^2 = 117/289. kappa = (238/289 - 117/289) / (172/289) = 121/172 = 0.7035.
    claims_supported before resolution: three answers in disagreement are pending; of the other 14 answers with
    claims, 8 are supported (1.0) and 6 not (0.0; the last one has bob's extra unsupported claim too): 8/14.
    After carol resolves claim 0 as supported and claims 9 and 14 as unsupported and contradicted: 9/17."""
    assert main(["review", str(run), "--import", str(_fill(run, tmp_path, "ann", ANN)), "--reviewer", "ann"]) == 0
    assert main(["review", str(run), "--import", str(_fill(run, tmp_path, "bob", BOB, extra="An extra claim.")),
                 "--reviewer", "ignored-the-csv-names-bob"]) == 0
    book = load_reviews(tmp_path / "cases.jsonl")
    assert sorted({r for _, _, r in book.reviews}) == ["ann", "bob"] and len(book.reviews) == 42

    report = _agreement(run, capsys)
    assert (report["claims"], report["reviewers"]) == (17, ["ann", "bob"])
    assert report["percent_agreement"] == pytest.approx(14 / 17)
    assert report["kappa"] == pytest.approx(121 / 172) and "alpha" not in report
    assert report["interval"]["low"] < report["kappa"] < report["interval"]["high"]
    assert len(report["disagreements"]) == 3
    first = report["disagreements"][0]
    assert [(v["reviewer"], v["verdict"], v["note"]) for v in first["verdicts"]] == [
        ("ann", "supported", "ann read it"), ("bob", "unsupported", "bob read it")]
    assert first["resolution"] is None and first["status"] == "disagreement"

    review, claims, counts = _claims_summary(run)
    assert review == {"pending": 3, "reviewed": 18}
    assert (claims["mean"], claims["scored"]) == (pytest.approx(8 / 14), 14)
    assert counts == {"agreed": 14, "in_disagreement": 3, "resolved": 0, "one_reviewer": 1}
    pending = [r for r in read_rows(run) if r.human_claim_review == "pending"]
    assert len(pending) == 3 and all(r.metrics["claims_supported"] is None for r in pending)
    assert all([c.status for c in r.claims] == ["disagreement"] and r.claims[0].verdict is None for r in pending)

    capsys.readouterr()
    resolve = tmp_path / "resolve.csv"
    assert main(["review", str(run), "--resolve", "--export", str(resolve)]) == 0
    records = list(csv.DictReader(io.StringIO(resolve.read_text())))
    assert len(records) == 3 and all(not r["resolution"] for r in records)
    assert "ann: supported by" in records[0]["verdicts"] and "bob: unsupported (bob read it)" in records[0]["verdicts"]
    passage = {r.case_id: r.retrieved[0].source_id for r in read_rows(run)}
    for record, verdict in zip(records, ("supported", "unsupported", "contradicted")):
        record.update(resolution=verdict, source_id=passage[record["case_id"]] if verdict == "supported" else "",
                      note="carol checked")
    _write(resolve, records)
    assert main(["review", str(run), "--import", str(resolve), "--reviewer", "carol"]) == 0
    assert "claims: 14 agreed, 0 in disagreement (pending), 3 resolved, 1 by one reviewer" in capsys.readouterr().out
    review, claims, _ = _claims_summary(run)
    assert review == {"pending": 0, "reviewed": 21}
    assert (claims["mean"], claims["scored"]) == (pytest.approx(9 / 17), 17)
    report = _agreement(run, capsys)
    assert report["kappa"] == pytest.approx(121 / 172)  # agreement measures the reviewers, not the resolutions
    assert [d["resolution"]["resolver"] for d in report["disagreements"]] == ["carol"] * 3
    assert main(["review", str(run), "--agreement", "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "disagreements: 3 (0 open, 3 resolved)" in text and "    resolved by carol: supported by " in text

    # A third reviewer who agrees with ann everywhere: Krippendorff's alpha instead of kappa.
    # Per claim: 14 unanimous (0); three split 2-1, each (3^2 - (2^2 + 1^2)) / 2 = 2: observed 6.
    # n = 51; n_S = 27, n_U = 16, n_C = 8; n^2 - sum n_c^2 = 2601 - 1049 = 1552.
    # alpha = 1 - 50 * 6 / 1552 = 1252/1552 = 0.8067.
    assert main(["review", str(run), "--import", str(_fill(run, tmp_path, "dave", ANN)), "--reviewer", "dave"]) == 0
    report = _agreement(run, capsys)
    assert report["alpha"] == pytest.approx(1252 / 1552) and "kappa" not in report
    assert (report["claims"], report["reviewers"]) == (17, ["ann", "bob", "dave"])


def test_a_resolution_must_name_a_claim_in_disagreement(run, tmp_path, capsys):
    assert main(["review", str(run), "--import", str(_fill(run, tmp_path, "ann", ANN)), "--reviewer", "ann"]) == 0
    records = list(csv.DictReader(io.StringIO((tmp_path / "ann.csv").read_text())))
    assert records[0]["claim"] and records[2]["claim"]
    records[0] = records[0] | {"verdict": "", "resolution": "unsupported", "source_id": ""}
    records[2] = records[2] | {"resolution": "unsupported"}
    _write(tmp_path / "bad.csv", records)
    assert main(["review", str(run), "--import", str(tmp_path / "bad.csv"), "--reviewer", "carol"]) == 2
    message = capsys.readouterr().err
    assert "bad.csv:2: resolution: reviewers do not disagree on claim" in message
    assert "bad.csv:4: resolution: a line holds either a reviewer's verdict or a resolution" in message


def test_agreement_text_and_degenerate_cases(run, tmp_path, capsys):
    capsys.readouterr()
    assert main(["review", str(run), "--agreement"]) == 0
    out = capsys.readouterr().out
    assert "claims seen by two or more reviewers: 0" in out and "no item was rated by two or more reviewers" in out
    assert main(["review", str(run), "--json"]) == 2 and "--json goes with --agreement" in capsys.readouterr().err
    # both reviewers say supported everywhere: kappa is undefined, percent agreement is 1
    for name in ("ann", "bob"):
        assert main(["review", str(run), "--import", str(_fill(run, tmp_path, name, "S" * 17)), "--reviewer",
                     name]) == 0
    report = _agreement(run, capsys)
    assert (report["percent_agreement"], report["kappa"]) == (1.0, None)
    assert "every verdict is 'supported'" in report["undefined_reason"] and report["disagreements"] == []
    assert main(["review", str(run), "--agreement"]) == 0
    out = capsys.readouterr().out
    assert "Cohen's kappa: n/a (undefined: every verdict is 'supported'" in out
    assert "percent agreement: 1.000 interval undefined (no variation)" in out


def test_terminal_resolution_shows_both_verdicts(run, tmp_path, monkeypatch, capsys):
    for name, letters in (("ann", ANN), ("bob", BOB)):
        assert main(["review", str(run), "--import", str(_fill(run, tmp_path, name, letters)), "--reviewer",
                     name]) == 0
    capsys.readouterr()
    # disagreement 1: show the passages, then supported by rank 1; 2: a note, then unsupported; 3: skip
    monkeypatch.setattr("sys.stdin", io.StringIO("p\ns 1\nn looked twice\nu\nk\n"))
    assert main(["review", str(run), "--resolve", "--reviewer", "carol"]) == 0
    out = capsys.readouterr().out
    assert "3 claim(s) on which reviewers disagree" in out and "disagreement 1 of 3" in out
    assert "  ann: supported by" in out and "  bob: unsupported (bob read it)" in out
    book = load_reviews(tmp_path / "cases.jsonl")
    assert sorted((r.verdict, r.resolver, r.note) for r in book.resolutions.values()) == [
        ("supported", "carol", ""), ("unsupported", "carol", "looked twice")]
    assert "claims: 14 agreed, 1 in disagreement (pending), 2 resolved" in out
    review, _, counts = _claims_summary(run)
    assert review == {"pending": 1, "reviewed": 20}
    assert counts == {"agreed": 14, "in_disagreement": 1, "resolved": 2, "one_reviewer": 0}


def test_review_screen(run, monkeypatch, capsys):
    rows = read_rows(run)
    first = rows[0]
    cited = next(p for p in first.retrieved if p.source_id == first.answer.citations[0].source_id)
    last = first.retrieved[-1]
    # answer 1: accept the split, then ask for the full passages, then supported by the cited passage; quit
    monkeypatch.setattr("sys.stdin", io.StringIO("\np\ns\nq\n"))
    assert main(["review", str(run), "--reviewer", "ann"]) == 0
    out = capsys.readouterr().out
    before, after = out.split("s/u/c/n > ", 1)
    assert "answer 1 of 21 · case " + first.case_id in before and "answer 2 of 21" in after
    assert f"question: {first.question}" in before and f"answer:   {first.answer.model_answer}" in before
    assert out.count("keys (type ? to see them again)") == 1
    line = next(x for x in before.splitlines() if x.startswith(f"  1. {cited.source_id} (valid): "))
    assert "»" in line and "«" in line and len(line) < 420 < len(cited.text)  # the quote in a few hundred chars
    assert last.text[:60] not in before  # full passages only on request
    assert f"[{last.rank}] {last.source_id} (page {last.page}): " in after
    assert "offered claims (sentence split):" in before and "passages: 4 retrieved" in before


def test_report_shows_agreement_and_disagreements_escaped(run, tmp_path):
    from harness.report.html import render_report
    from harness.runs import load_run
    assert "Reviewer agreement" not in render_report(load_run(run))
    for name, letters in (("ann", ANN), ("<b>bob</b>", BOB)):
        assert main(["review", str(run), "--import", str(_fill(run, tmp_path, name, letters)), "--reviewer",
                     "x"]) == 0
    page = render_report(load_run(run))
    section = page.split("<h2>Reviewer agreement</h2>", 1)[1].split("<h2>Cases</h2>", 1)[0]
    assert "17 claims rated by two or more reviewers (&lt;b&gt;bob&lt;/b&gt;, ann)" in section
    assert "percent agreement 0.824" in section and f"Cohen's kappa {121 / 172:.3f} [" in section
    assert section.count("<tr><td>") == 3 and section.count("open (pending)") == 3
    assert "<b>bob" not in page and "<script" not in page
    assert page.count("claim review: pending") == 3  # the case table: the three answers in disagreement


def test_quote_in_context_is_cut_and_highlighted(monkeypatch):
    from harness.cli.review_walk import quote_context
    passage = "A" * 500 + " the quoted words here " + "B" * 500
    plain = quote_context(passage, "The quoted  words here", chars=100)
    assert plain.startswith("…A") and plain.endswith("B…") and "»the quoted words here«" in plain
    assert len(plain) < 110
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert "\x1b[7mthe quoted words here\x1b[0m" in quote_context(passage, "the quoted words here")
    assert quote_context("short text", "absent quote").endswith("(quote not found in this passage)")


def test_terminal_walk_offers_each_reviewer_only_their_own_unreviewed_answers(run, tmp_path, monkeypatch, capsys):
    assert main(["review", str(run), "--import", str(_fill(run, tmp_path, "ann", ANN)), "--reviewer", "ann"]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["review", str(run), "--reviewer", "ann"]) == 0
    assert "0 answer(s) to review as ann" in capsys.readouterr().out
    # bob reviews blind: every answer is offered, and ann's verdicts are not on his screen
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["review", str(run), "--reviewer", "bob"]) == 0
    out = capsys.readouterr().out
    assert "21 answer(s) to review as bob" in out and "ann read it" not in out and "supported by" not in out
