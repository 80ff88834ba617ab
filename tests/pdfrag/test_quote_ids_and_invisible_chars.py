"""Issue #19 items 5 and 6: quotes judged right when passages share an id, and invisible format characters."""

from __future__ import annotations

import pytest

from harness.cases import Case, Evidence
from harness.records import Citation, Passage, SystemAnswer
from harness.rows import ScoringRules, build_row
from pdfrag.citations import check_quote
from pdfrag.text import normalize

FIRST = "Hotel costs are reimbursed up to EUR 160 per night."
SECOND = "Meals are paid up to EUR 45 per day."


def _answer(quote: str) -> SystemAnswer:
    """Two chunks of one page under the page's id (LangChain's default metadata), quoting the first."""
    return SystemAnswer(
        answer="EUR 160 per night.",
        retrieved=(Passage(source_id="handbook.pdf#p2", text=FIRST, rank=1),
                   Passage(source_id="handbook.pdf#p2", text=SECOND, rank=2)),
        citations=(Citation(source_id="handbook.pdf#p2", quote=quote),))


def test_a_quote_from_the_first_of_two_passages_with_one_id_is_valid_and_the_row_warns_once():
    case = Case(id="hotel", question="Hotel limit?", abstain=False, facts=(("160",),),
                evidence=(Evidence("handbook.pdf#p2"),))
    row = build_row(case, _answer("reimbursed up to EUR 160 per night"), ScoringRules(ks=(1, 3)), elapsed_ms=1.0)
    assert row.answer.citations[0].valid is True and row.answer.status == "answered"
    assert row.quote_validation.status == "passed"
    shared = [w for w in row.warnings if "share a source id" in w]
    assert len(shared) == 1 and "handbook.pdf#p2 (2 passages)" in shared[0]


def test_a_quote_in_neither_passage_with_the_id_stays_invalid():
    verdict = check_quote("a#p1", "one two three four", [("a#p1", "five six seven"), ("a#p1", "eight nine"),
                                                         ("b#p1", "one two three four")], min_words=4)
    assert not verdict.valid and verdict.reason == "quote is from b#p1, not from the cited a#p1"


@pytest.mark.parametrize("char", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u2066", "\u200e"])
def test_normalize_drops_format_characters(char):
    assert normalize(f"reim{char}bursed up{char} to") == "reimbursed up to"


def test_a_quote_of_what_is_visible_matches_a_page_with_zero_width_characters():
    page = "Hotel costs are re\u200bimbursed up to EUR\u2060 160 per night."
    verdict = check_quote("a#p1", "reimbursed up to EUR 160", [("a#p1", page)], min_words=4)
    assert verdict.valid, verdict.reason


def test_every_format_character_of_this_pythons_unicode_is_dropped():
    import sys
    import unicodedata
    kept = [hex(c) for c in range(sys.maxunicode + 1)
            if unicodedata.category(chr(c)) == "Cf" and normalize(f"a{chr(c)}b") != "ab"]
    assert kept == []


def test_the_report_and_review_show_the_passage_that_holds_the_quote(capsys):
    """The quote is in the first of two passages sharing an id: both views show that one, not the last."""
    from harness.cli.review_walk import _show_answer
    from harness.report.html import _citations
    case = Case(id="hotel", question="Hotel limit?", abstain=False, facts=(("160",),),
                evidence=(Evidence("handbook.pdf#p2"),))
    row = build_row(case, _answer("reimbursed up to EUR 160 per night"), ScoringRules(ks=(1, 3)), elapsed_ms=1.0)
    html = _citations(row)
    assert "<mark>reimbursed up to EUR 160 per night</mark>" in html and "Meals" not in html
    _show_answer(row, "answer")
    shown = capsys.readouterr().out
    assert "quote not found" not in shown and "EUR 160" in shown.split("citations:")[1].split("passages:")[0]
    assert "passages: 2 retrieved (handbook.pdf#p2, handbook.pdf#p2)" in shown
