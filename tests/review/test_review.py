"""Human claim review: records, the reviews file, applying reviews to rows, CSV round trip, the terminal walk,
and a review carried from one run to the next only while the answer is unchanged."""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.records import ClaimRecord, Row
from harness.records.reviews import ReviewLine
from harness.review.csv_io import export_csv, import_csv, passages_by_answer
from harness.review.store import (
    Claim,
    Resolution,
    Review,
    ReviewBook,
    apply_reviews,
    apply_to_run,
    load_reviews,
    read_reviews,
    reviews_path,
    save_reviews,
    sentence_split,
)
from harness.rows import answer_sha256, validate_row
from harness.runs import read_rows
from harness.settings import RunSettings
from harness.summary import summarize
from pdfrag.errors import InputError
from tests.support.rowkit import make_row

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_docs"
SHA = answer_sha256("The limit is EUR 160. Breakfast is included.")


def _review(case_id="c1", sha=SHA, verdicts=("supported", "unsupported")) -> Review:
    claims = tuple(Claim(f"claim {i}", v, "doc.pdf#p1.1" if v == "supported" else None, "")
                   for i, v in enumerate(verdicts))
    return Review(case_id, sha, claims, "ann", "2026-01-01T00:00:00+00:00")


KS = (1, 2, 4)


def _row(case_id="c1", answer="The limit is EUR 160. Breakfast is included.", error=None, **kw):
    return make_row(case_id, {"facts": 1.0, "claims_supported": None}, answer=answer, error=error, **kw)


@pytest.mark.parametrize("text, expected", [
    ("The limit is EUR 160. Breakfast is included.", ["The limit is EUR 160.", "Breakfast is included."]),
    ("Mileage is EUR 0.30 per km, e.g. for trips. Taxis cost more!", ["Mileage is EUR 0.30 per km, e.g. for trips.",
                                                                       "Taxis cost more!"]),
    ("One sentence without a stop", ["One sentence without a stop"]),
    ("  Spaced\n  out.   Really? Yes.", ["Spaced out.", "Really?", "Yes."]),
    ("", []),
])
def test_sentence_split(text, expected):
    assert sentence_split(text) == expected


@pytest.mark.parametrize("verdicts, share", [
    (("supported", "supported"), 1.0),
    (("supported", "unsupported", "contradicted", "supported"), 0.5),
    (("contradicted",), 0.0),
    ((), None),  # an answer reviewed as making no claims: reviewed, but not applicable
])
def test_claims_supported(verdicts, share):
    assert _review(verdicts=verdicts).claims_supported == share


def test_apply_reviews_matches_case_and_answer_hash():
    reviews = ReviewBook.of([_review()])
    row = _row()
    done = apply_reviews(row, reviews, KS)
    assert done.human_claim_review == "reviewed" and done.metrics["claims_supported"] == 0.5
    assert [c.verdict for c in done.claims] == ["supported", "unsupported"]
    assert row.human_claim_review == "pending" and row.metrics["claims_supported"] is None  # not mutated
    changed = apply_reviews(_row(answer="The limit is EUR 210."), reviews, KS)
    assert (changed.human_claim_review, changed.claims, changed.metrics["claims_supported"]) == \
        ("pending", None, None)
    # whitespace changes leave the normalised answer, and so the review, in place
    assert apply_reviews(_row(answer=" The limit is  EUR 160.\nBreakfast is included. "), reviews,
                         KS).human_claim_review == "reviewed"
    assert apply_reviews(_row(error="timeout"), reviews, KS).human_claim_review == "pending"
    empty = apply_reviews(_row(answer=""), ReviewBook.of([_review(sha=answer_sha256(""), verdicts=())]), KS)
    assert (empty.human_claim_review, empty.claims) == ("reviewed", ())
    assert empty.metrics["claims_supported"] is None


def test_reviews_file_beside_the_cases_round_trips(tmp_path):
    cases = tmp_path / "my_cases.jsonl"
    assert reviews_path(cases) == tmp_path / "my_cases.reviews.jsonl"
    assert load_reviews(cases) == ReviewBook()
    reviews = {("c2", SHA): _review("c2"), ("c1", SHA): _review("c1", verdicts=())}
    save_reviews(reviews_path(cases), reviews)
    assert load_reviews(cases) == ReviewBook.of(reviews.values())
    assert [json.loads(line)["case_id"] for line in reviews_path(cases).read_text().splitlines()] == ["c1", "c2"]


def test_bad_reviews_file_reports_every_line(tmp_path):
    path = tmp_path / "r.jsonl"
    good = json.dumps(ReviewLine.of(_review()).to_json())
    path.write_text("\n".join([good, "{not json", json.dumps({"case_id": "c", "answer_sha256": "x", "claims": [
        {"claim": "a", "verdict": "maybe"}]})]) + "\n")
    with pytest.raises(InputError) as err:
        read_reviews(path)
    message = str(err.value)
    assert f"{path}:2: not valid JSON" in message
    assert f"{path}:3: answer_sha256: String should match pattern '^[0-9a-f]{{64}}$'" in message
    assert f"{path}:3: claims.0.verdict: Input should be 'supported', 'unsupported', 'contradicted' or 'unverified'" \
        in message


def test_csv_export_then_import_round_trips(tmp_path):
    rows = [_row("c1", question="Hotel?", retrieved=["doc.pdf#p1.1"]), _row("c2", answer="", question="CEO?")]
    reviews = ReviewBook.of([_review()])
    text = export_csv(rows, reviews, reviewer="ann")
    lines = text.splitlines()
    assert lines[0] == ("case_id,answer_sha256,question,answer,cited_source_ids,retrieved_source_ids,cited_quotes,"
                        "reviewer,claim,verdict,source_id,note,resolution")
    retrieved = " | ".join(p.source_id for p in rows[1].retrieved)
    assert len(lines) == 4 and lines[3] == f"c2,{answer_sha256('')},CEO?,,,{retrieved},,ann,,,,,"
    path = tmp_path / "r.csv"
    path.write_text(text)
    back = import_csv(path, reviewer="ann", reviewed_at="2026-01-01T00:00:00+00:00", known=passages_by_answer(rows))
    assert back == reviews  # c2 has blank verdicts: still pending
    path.write_text(text.replace(f"{lines[3]}", lines[3][:-3] + "none,,,"))
    assert import_csv(path, reviewer="ann", reviewed_at="t").review_of(("c2", answer_sha256("")), "ann").claims == ()
    # another reviewer's export is blind: ann's verdicts are not in it
    assert ",ann," not in export_csv(rows, reviews, reviewer="bob")


def test_csv_import_reports_every_problem_with_line_and_field(tmp_path):
    path = tmp_path / "r.csv"
    head = "case_id,answer_sha256,question,answer,claim,verdict,source_id,note\n"
    path.write_text(head + f"c1,{SHA},q,a,one,supported,,\n"  # 2: supported without a source
                    + f"c1,{SHA},q,a,two,maybe,,\n"  # 3: bad verdict
                    + "c1,abc,q,a,three,unsupported,,\n"  # 4: bad hash
                    + f"c1,{SHA},q,a,four,supported,doc.pdf#p9.9,\n"  # 5: not a retrieved passage
                    + f"c3,{SHA},q,a,five,,,\n")  # 6: unknown answer
    with pytest.raises(InputError) as err:
        import_csv(path, reviewer="ann", reviewed_at="t", known={("c1", SHA): {"doc.pdf#p1.1"}})
    message = str(err.value)
    for expected in (f"{path}:2: source_id: a supported claim needs", f"{path}:3: verdict: 'maybe'",
                     f"{path}:4: answer_sha256: expected 64",
                     f"{path}:5: source_id: 'doc.pdf#p9.9' is neither retrieved",
                     f"{path}:6: answer_sha256: no row of this run has this answer for case 'c3'"):
        assert expected in message
    # a CSV in the layout before the reviewer and resolution columns imports as the importing reviewer's
    path.write_text(head + f"c1,{SHA},q,a,one,unsupported,,\n" + f"c1,{SHA},q,a,two,contradicted,,why\n")
    old = import_csv(path, reviewer="ann", reviewed_at="t", known={("c1", SHA): {"doc.pdf#p1.1"}})
    assert old == ReviewBook.of([Review("c1", SHA, (Claim("one", "unsupported"), Claim("two", "contradicted", None,
                                                                                        "why")), "ann", "t")])
    path.write_text(head + f"c1,{SHA},q,a,one,unsupported,,\n" + f"c1,{SHA},q,a,two,,,\n")
    with pytest.raises(InputError, match=r"r\.csv:3: verdict: blank while other claims"):
        import_csv(path, reviewer="ann", reviewed_at="t")
    path.write_text(head + f"c1,{SHA},q,a,The limit.,unsupported,,\n" + f"c1,{SHA},q,a,the  LIMIT.,contradicted,,\n")
    with pytest.raises(InputError, match=r"r\.csv:3: claim: the same claim as line 2 of case 'c1'"):
        import_csv(path, reviewer="ann", reviewed_at="t")


@pytest.fixture
def cases_copy(tmp_path):
    """The sample cases copied to tmp_path, so that reviews land there and never in sample_docs."""
    path = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE / "cases.jsonl", path)
    return path


def _offline(tmp_path: Path, cases: Path, label: str, **extra) -> Path:
    settings = RunSettings(system="offline", out=str(tmp_path / "runs"), label=label, docs=str(SAMPLE / "handbook.pdf"),
                           cases=str(cases), **extra)
    return run_evaluation(settings).run_dir


def test_terminal_review_saves_and_updates_rows_and_summary(tmp_path, cases_copy, monkeypatch, capsys):
    run = _offline(tmp_path, cases_copy, "a", chunk_size=1500)
    first, second = read_rows(run)[:2]
    assert first.answer.status == "answered" and second.answer.model_answer == ""
    # case 1: accept the offered split, add a note, mark supported by the cited passage;
    # case 2 (no answer): accept zero claims; case 3: edit into two claims, supported by rank 1, contradicted; quit.
    monkeypatch.setattr("sys.stdin", io.StringIO("\nn checked\ns\n\ne\nfirst\nsecond\n\ns 1\nc\nq\n"))
    assert main(["review", str(run), "--reviewer", "ann"]) == 0
    out = capsys.readouterr().out
    assert f"question: {first.question}" in out and "passages:" in out and "»" in out
    reviews = load_reviews(cases_copy)
    assert len(reviews.reviews) == 3
    review = reviews.review_of((first.case_id, first.answer.answer_sha256), "ann")
    assert review.claims[0].verdict == "supported" and review.claims[0].note == "checked"
    assert review.claims[0].source_id == first.answer.citations[0].source_id
    rows = read_rows(run)
    assert [r.human_claim_review for r in rows[:4]] == ["reviewed", "reviewed", "reviewed", "pending"]
    assert [r.metrics["claims_supported"] for r in rows[:4]] == [1.0, None, 0.5, None]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["human_claim_review"] == {"pending": 18, "reviewed": 3}
    claims = summary["metrics"]["claims_supported"]
    assert (claims["mean"], claims["scored"]) == (0.75, 2)
    assert "3 reviewed, 18 pending" in out


def test_review_applies_to_the_next_run_only_while_the_answer_is_unchanged(tmp_path, cases_copy, capsys):
    first = _offline(tmp_path, cases_copy, "first", chunk_size=1500)
    csv_path = tmp_path / "review.csv"
    assert main(["review", str(first), "--export", str(csv_path)]) == 0
    # A reviewer in a spreadsheet marks every claim unsupported and every empty answer as making no claims.
    records = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    for record in records:
        record["verdict"] = "unsupported" if record["claim"] else "none"
    with open(csv_path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    assert main(["review", str(first), "--import", str(csv_path), "--reviewer", "ann"]) == 0
    assert all(r.human_claim_review == "reviewed" for r in read_rows(first))
    reviews = load_reviews(cases_copy)

    same = _offline(tmp_path, cases_copy, "same", chunk_size=1500)
    apply_to_run(same, reviews)
    assert all(r.human_claim_review == "reviewed" for r in read_rows(same))

    other = _offline(tmp_path, cases_copy, "other", chunk_size=600)
    before = {r.case_id: r.answer.answer_sha256 for r in read_rows(first)}
    summary = apply_to_run(other, reviews)
    rows = read_rows(other)
    changed = {r.case_id for r in rows if r.answer.answer_sha256 != before[r.case_id]}
    assert changed  # the smaller chunks change some answers
    assert {r.case_id for r in rows if r.human_claim_review == "pending"} == changed
    assert all(r.metrics["claims_supported"] is None for r in rows if r.case_id in changed)
    assert summary.human_claim_review["pending"] == len(changed)


def test_a_csv_filled_from_its_own_columns_imports_with_no_problem(tmp_path, cases_copy, capsys):
    """Issue #30 item 2: every claim decided from the CSV's own columns (cited_source_ids, retrieved_source_ids,
    cited_quotes), with no other file open: supported by the first cited id, or else unsupported naming a
    retrieved id in the note; an empty answer makes no claims."""
    run = _offline(tmp_path, cases_copy, "filled")
    csv_path = tmp_path / "review.csv"
    assert main(["review", str(run), "--export", str(csv_path), "--reviewer", "ann"]) == 0
    records = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    rows = {r.case_id: r for r in read_rows(run)}
    for record in records:  # the columns say what each answer cited and what was retrieved for it
        row = rows[record["case_id"]]
        assert record["cited_source_ids"] == " | ".join(dict.fromkeys(c.source_id for c in row.answer.citations))
        assert record["retrieved_source_ids"] == " | ".join(p.source_id for p in row.retrieved)
        assert all(f'{c.source_id}: "{c.quote}"' in record["cited_quotes"] for c in row.answer.citations)
    supported = 0
    for record in records:
        cited = [i for i in record["cited_source_ids"].split(" | ") if i]
        retrieved = [i for i in record["retrieved_source_ids"].split(" | ") if i]
        if not record["claim"]:
            record["verdict"] = "none"
        elif cited and cited[0] in record["cited_quotes"]:
            record["verdict"], record["source_id"] = "supported", cited[0]
            supported += 1
        else:
            record["verdict"], record["source_id"] = "unsupported", ""
            record["note"] = f"not in {retrieved[0]}" if retrieved else ""
    assert supported > 0
    with open(csv_path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    capsys.readouterr()
    assert main(["review", str(run), "--import", str(csv_path), "--reviewer", "ann"]) == 0
    assert "problem" not in capsys.readouterr().err
    assert all(r.human_claim_review == "reviewed" for r in read_rows(run))
    # a retrieved passage the answer did not cite is accepted as the support too
    record = next(r for r in records if r["claim"] and len(r["retrieved_source_ids"].split(" | ")) > 1)
    record["verdict"], record["source_id"] = "supported", record["retrieved_source_ids"].split(" | ")[-1]
    one = [r for r in records if r["case_id"] == record["case_id"]]
    with open(csv_path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(one)
    assert main(["review", str(run), "--import", str(csv_path), "--reviewer", "bob"]) == 0


def test_review_needs_a_findable_cases_file(tmp_path, cases_copy, monkeypatch, capsys):
    run = _offline(tmp_path, cases_copy, "a")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["inputs"]["cases"]["path"] = "no/such/cases.jsonl"
    (run / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["review", str(run)]) == 2
    assert "pass --reviews FILE" in capsys.readouterr().err
    assert main(["review", str(run), "--reviews", str(tmp_path / "r.jsonl"), "--reviewer", "ann"]) == 0


# Several reviewers ----------------------------------------------------------------------------------------------

def _by(reviewer: str, *claims: tuple[str, str], sha: str = SHA, at: str = "2026-01-02T00:00:00+00:00") -> Review:
    return Review("c1", sha, tuple(Claim(text, v, "doc.pdf#p1.1" if v == "supported" else None, f"{reviewer} says")
                                   for text, v in claims), reviewer, at)


def test_reviews_file_in_the_format_before_reviewers_still_loads(tmp_path):
    """A file exactly as `save_reviews` wrote it before several reviewers were kept: one line per answer. Two
    lines for one answer by different reviewers are now both kept; the same reviewer twice: the later wins."""
    path = tmp_path / "cases.reviews.jsonl"
    path.write_text(
        '{"case_id": "c1", "answer_sha256": "' + SHA + '", "claims": [{"claim": "The limit is EUR 160.", '
        '"verdict": "supported", "source_id": "doc.pdf#p1.1", "note": ""}, {"claim": "Breakfast is included.", '
        '"verdict": "unsupported", "source_id": null, "note": "not in the text"}], "reviewer": "ann", '
        '"reviewed_at": "2026-01-01T00:00:00+00:00"}\n'
        '{"case_id": "c2", "answer_sha256": "' + SHA + '", "claims": [], "reviewer": "ann", '
        '"reviewed_at": "2026-01-01T00:00:00+00:00"}\n'
        '{"case_id": "c2", "answer_sha256": "' + SHA + '", "claims": [], "reviewer": "ann", '
        '"reviewed_at": "2026-01-03T00:00:00+00:00"}\n')
    book = read_reviews(path)
    assert sorted(book.reviews) == [("c1", SHA, "ann"), ("c2", SHA, "ann")]
    assert book.review_of(("c2", SHA), "ann").reviewed_at == "2026-01-03T00:00:00+00:00"
    done = apply_reviews(_row(), book, KS)
    assert (done.human_claim_review, done.metrics["claims_supported"]) == ("reviewed", 0.5)
    assert [(c.verdict, c.status, c.note) for c in done.claims] == [
        ("supported", "one_reviewer", ""), ("unsupported", "one_reviewer", "not in the text")]
    save_reviews(path, book)
    assert read_reviews(path) == book


def test_reviewing_again_replaces_only_that_reviewers_verdicts():
    book = ReviewBook.of([_by("ann", ("A.", "supported")), _by("bob", ("A.", "unsupported"))])
    again = book.with_records([_by("ann", ("A.", "unsupported"), at="2026-02-01T00:00:00+00:00")])
    assert again.review_of(("c1", SHA), "bob") == book.review_of(("c1", SHA), "bob")
    assert again.review_of(("c1", SHA), "ann").claims[0].verdict == "unsupported"
    assert len(again.reviews) == 2
    assert [s.status for s in again.claim_states(("c1", SHA))] == ["agreed"]


def test_claims_are_matched_by_normalised_case_folded_text():
    book = ReviewBook.of([_by("ann", ("The limit is EUR 160.", "supported"), ("Breakfast is included.", "supported")),
                          _by("bob", ("the limit  is EUR\n160.", "supported"), ("Parking is free.", "unsupported"))])
    states = book.claim_states(("c1", SHA))
    assert [(s.claim, s.status, [r for r, _ in s.reviews]) for s in states] == [
        ("The limit is EUR 160.", "agreed", ["ann", "bob"]),
        ("Breakfast is included.", "one_reviewer", ["ann"]),
        ("Parking is free.", "one_reviewer", ["bob"])]
    done = apply_reviews(_row(), book, KS)
    # agreed S, ann's S, bob's U: 2 of 3 supported; notes of both reviewers kept on the agreed claim
    assert done.metrics["claims_supported"] == pytest.approx(2 / 3)
    assert done.claims[0].note == "ann: ann says; bob: bob says"
    assert [(r.reviewer, r.claim) for r in done.claims[0].reviews] == [
        ("ann", "The limit is EUR 160."), ("bob", "the limit  is EUR\n160.")]


def test_a_disagreement_is_pending_until_resolved(tmp_path):
    book = ReviewBook.of([_by("ann", ("A.", "supported"), ("B.", "supported")),
                          _by("bob", ("A.", "supported"), ("B.", "contradicted"))])
    open_ = apply_reviews(_row(), book, KS)
    assert (open_.human_claim_review, open_.metrics["claims_supported"]) == ("pending", None)
    assert open_.metrics["claim_support"] is None  # the five-check metric reads the same claims
    assert [(c.status, c.verdict) for c in open_.claims] == [("agreed", "supported"), ("disagreement", None)]
    assert "claim 'B.' in disagreement between reviewers" in open_.failure_reasons
    resolved = book.with_records([Resolution("c1", SHA, "b.", "unsupported", None, "B is not in p1", "carol", "t")])
    done = apply_reviews(_row(), resolved, KS)
    assert (done.human_claim_review, done.metrics["claims_supported"]) == ("reviewed", 0.5)
    assert done.claims[1].status == "resolved" and done.claims[1].resolution.resolver == "carol"
    rows = [open_, apply_reviews(_row("c2"), ReviewBook.of(replace(r, case_id="c2") for r in resolved.records()),
                                 KS), _row("c3")]
    summary = summarize(rows, ["claims_supported"], {})
    assert summary.claims.model_dump() == {"agreed": 2, "in_disagreement": 1, "resolved": 1, "one_reviewer": 0}
    assert summary.human_claim_review == {"pending": 2, "reviewed": 1}
    assert (summary.mean("claims_supported"), summary.metrics["claims_supported"].scored) == (0.5, 1)
    path = tmp_path / "r.jsonl"
    save_reviews(path, resolved)
    assert read_reviews(path) == resolved
    assert json.loads(path.read_text().splitlines()[-1])["kind"] == "resolution"
    # a row with a disagreement matches the published schema and reads back into the same record
    validate_row(open_.to_json())
    assert Row.model_validate_json(open_.line()) == open_


def test_claim_record_fields_and_older_rows():
    """Rows written before reviewers were kept carry claims without status, reviews or resolution: they read as
    seen by one reviewer. A claims file's own annotations (unknown keys) are kept."""
    old = ClaimRecord.model_validate({"claim": "A.", "verdict": "supported", "source_id": "doc.pdf#p1.1",
                                      "note": "", "page_hint": 3})
    assert (old.status, old.reviews, old.resolution, old.settled) == ("one_reviewer", (), None, True)
    assert old.model_dump(mode="json")["page_hint"] == 3
    with pytest.raises(ValidationError, match="status"):
        ClaimRecord.model_validate({"claim": "A.", "verdict": None, "status": "undecided"})
    row = _row().model_copy(update={"claims": (ClaimRecord(claim="A.", verdict=None, status="disagreement"),)})
    validate_row(row.to_json())  # a null verdict is in the published schema
    data = row.to_json()
    data["claims"][0]["status"] = "undecided"
    with pytest.raises(ValueError, match="breaks the row schema at claims"):
        validate_row(data)


def test_two_reviewers_saving_from_stale_copies_both_keep_their_work(tmp_path):
    # Each save re-reads the file under a lock: Bob's session, opened before Ann saved, does not erase Ann's review.
    from harness.review.store import add_reviews, read_reviews
    path = tmp_path / "cases.reviews.jsonl"
    sha = "a" * 64
    add_reviews(path, [Review("c1", sha, (Claim("x", "supported", "d#p1"),), "ann", "t1")])
    book = add_reviews(path, [Review("c1", sha, (Claim("x", "unsupported"),), "bob", "t2")])
    assert {r.reviewer for r in read_reviews(path).records()} == {"ann", "bob"}
    assert book.review_of(("c1", sha), "ann") is not None and book.review_of(("c1", sha), "bob") is not None


def test_reviews_are_not_applied_while_the_run_is_being_written(tmp_path, cases_copy):
    from harness.errors import RunLocked
    from harness.runs import RunLock
    run = _offline(tmp_path, cases_copy, "locked")
    with RunLock(run):  # stands for a `--resume` still appending rows
        with pytest.raises(RunLocked, match="is being written by process"):
            apply_to_run(run, ReviewBook())
    apply_to_run(run, ReviewBook())  # once it is done, it goes through


def _withheld_rows() -> list[Row]:
    """A `no_answer` row (an answer without a citation) and an `invalid_citation` row, as the bundled chatbot
    writes them: the user was shown its fixed message, not the model's answer."""
    from chatbot.answer import NO_ANSWER
    from harness.records import CitationResult
    rows = []
    for case_id, status, citations, reason in (
            ("c1", "no_answer", (), "the answer has no citation"),
            ("c2", "invalid_citation", (CitationResult(source_id="doc.pdf#p1.1", quote="EUR 999 per night",
                                                       valid=False, reason="quote not in doc.pdf#p1.1"),),
             "quote not in doc.pdf#p1.1")):
        row = _row(case_id, answer="The limit is EUR 999. Breakfast is extra.", retrieved=["doc.pdf#p1.1"])
        answer = row.answer.model_copy(update={"status": status, "text": NO_ANSWER, "citations": citations,
                                               "reasons": (reason,), "abstained": status == "no_answer"})
        rows.append(row.model_copy(update={"answer": answer}))
    return rows + [_row("c3", retrieved=["doc.pdf#p1.1"])]  # answered: shown, its claims offered


def test_claims_are_offered_from_what_the_user_was_shown(tmp_path, monkeypatch, capsys):
    """Issue #44: the terminal walk, the CSV and the judge offer no claims from an answer the user never saw (the
    fixed message was shown instead); the screen says what was shown, and an invalid quote is shown, not hidden."""
    from chatbot.answer import NO_ANSWER
    from harness.cli.review_walk import walk
    from harness.judge.run import _todo
    rows = _withheld_rows()
    path = tmp_path / "cases.reviews.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("\n\n\ns 1\nu\n"))  # accept what is offered on each answer
    book = walk(rows, ReviewBook(), path, "ann")
    out = capsys.readouterr().out
    assert out.count("no claims offered (the answer was withheld from the user; e types claims)") == 2
    assert (f"shown:    {NO_ANSWER} (the user was shown this, not the answer above: the answer has no "
            "citation)") in out
    assert ('  1. doc.pdf#p1.1 (quote not in doc.pdf#p1.1): "EUR 999 per night"; the passage: passage '
            "doc.pdf#p1.1  (quote not found in this passage)") in out
    assert "offered claims (sentence split):\n  1. The limit is EUR 160.\n  2. Breakfast is included." in out
    claims = {row.case_id: [c.claim for c in book.review_of((row.case_id, row.answer.answer_sha256), "ann").claims]
              for row in rows}
    assert claims == {"c1": [], "c2": [], "c3": ["The limit is EUR 160.", "Breakfast is included."]}
    sheet = list(csv.DictReader(io.StringIO(export_csv(rows, ReviewBook(), reviewer="bob"))))
    assert [(r["case_id"], r["claim"]) for r in sheet] == [("c1", ""), ("c2", ""), ("c3", "The limit is EUR 160."),
                                                          ("c3", "Breakfast is included.")]
    assert [(row.case_id, claims) for row, claims in _todo(rows)] == [
        ("c3", ["The limit is EUR 160.", "Breakfast is included."])]
