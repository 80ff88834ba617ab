"""The pure parts of drafting: verification checks, language guess, unanswerable terms, the minimum detectable
difference, export tags and the report. No server."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.drafting.export import to_case, to_cases
from harness.drafting.language import guess, same_language
from harness.drafting.records import Decision, Draft, Provenance, Reason, Verification
from harness.drafting.report import build_report, render_draft_report
from harness.drafting.unanswerable import Sentences, check_unanswerable, distinguishing_terms
from harness.drafting.verify import Limits, PageView, check_draft, copy_measures, is_deictic, longest_common_run
from pdfrag.text import fold

PAGE_A = ("Hotel costs are reimbursed up to EUR 160 per night, including breakfast. Mileage is paid at EUR 0.30 "
          "per km. The shared rule: receipts must be kept for ten years.")
PAGE_B = "Equipment. The shared rule: receipts must be kept for ten years. Laptops are refreshed every 3 years."
VIEW = PageView({"a.pdf#p1": fold(PAGE_A), "b.pdf#p1": fold(PAGE_B)},
                {"a.pdf#p1": [fold(PAGE_A)], "b.pdf#p1": [fold(PAGE_B)]}, {"a.pdf#p1": "en", "b.pdf#p1": "en"})


def codes(checked) -> list[str]:
    return [r.code for r in checked.reasons]


@pytest.mark.parametrize("question, quote, facts, expected", [
    ("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night", ["EUR 160"], []),
    ("What is the nightly hotel cap?", "hotel costs are REIMBURSED up to eur 160 per night", ["EUR 160"], []),
    ("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 180 per night", ["EUR 180"],
     ["quote_not_found"]),
    ("What is the nightly hotel cap?", "EUR 160 per", ["EUR 160"], ["quote_too_short"]),
    ("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night", ["16"],
     ["fact_not_in_quote"]),
    ("Is EUR 160 the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night", ["EUR 160"],
     ["fact_in_question"]),
    ("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night",
     ["costs are reimbursed up to EUR 160"], ["fact_too_long"]),
    ("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night", [], ["no_facts"]),
    ("Hotel costs are reimbursed up to what per night?", "Hotel costs are reimbursed up to EUR 160 per night",
     ["EUR 160"], ["question_copies_quote"]),
    ("What does this document say about hotels?", "Hotel costs are reimbursed up to EUR 160 per night",
     ["EUR 160"], ["deictic_question"]),
    ("Wie hoch ist die Hotelpauschale pro Nacht?", "Hotel costs are reimbursed up to EUR 160 per night",
     ["EUR 160"], ["wrong_language"]),
    ("How long are receipts kept?", "Laptops are refreshed every 3 years", ["3 years"], ["quote_on_wrong_page"]),
])
def test_check_draft_reasons(question, quote, facts, expected):
    assert codes(check_draft(question, quote, facts, "a.pdf#p1", VIEW)) == expected


def test_a_copied_question_names_what_was_measured_and_the_limits():
    """Issue #44 item 7: a reason carries its numbers. "Hotel costs are reimbursed up to" is 6 words in a row of
    the quote; the question's content words (hotel, costs, reimbursed, night) are all in it."""
    checked = check_draft("Hotel costs are reimbursed up to what per night?",
                          "Hotel costs are reimbursed up to EUR 160 per night", ["EUR 160"], "a.pdf#p1", VIEW)
    assert [r.message for r in checked.reasons] == [
        "the question is a near copy of its quote: 6 words in a row and 100% of its content words are in the quote "
        "(a copy: 5 words in a row, or 80% and 3 in a row)"]


def test_a_quote_on_several_pages_makes_them_all_evidence():
    checked = check_draft("How long must receipts be stored?", "receipts must be kept for ten years", ["ten years"],
                          "b.pdf#p1", VIEW)
    assert checked.reasons == () and checked.evidence == ("b.pdf#p1", "a.pdf#p1")


def test_a_quote_cut_by_a_chunk_boundary_fails():
    cut = PageView(VIEW.pages, {"a.pdf#p1": [fold(PAGE_A[:40]), fold(PAGE_A[30:])]}, VIEW.languages)
    assert codes(check_draft("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night",
                             ["EUR 160"], "a.pdf#p1", cut)) == ["quote_cut_by_chunk"]


def test_copy_measures_and_tags():
    overlap, run = copy_measures("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night")
    assert (overlap, run) == (pytest.approx(1 / 3), 1)  # content words nightly, hotel, cap; "hotel" shared
    assert longest_common_run(["a", "b", "c", "d", "e"], ["x", "b", "c", "d", "y"]) == 3
    assert check_draft("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night",
                       ["EUR 160"], "a.pdf#p1", VIEW).tags == ("paraphrase",)
    lexical = check_draft("How much are hotel costs reimbursed per night?",
                          "Hotel costs are reimbursed up to EUR 160 per night", ["EUR 160"], "a.pdf#p1", VIEW)
    assert lexical.tags == ("lexical",) and lexical.reasons == ()


@pytest.mark.parametrize("question, phrase", [
    ("According to the text, what is the limit?", "According to the text"),
    ("What does the above say about meals?", "the above"),
    ("What is covered in this section?", "this section"),
    ("Which rule in the handbook covers taxis?", "the handbook"),
    ("What is the hotel limit in Paris?", None),
    ("Which documents must I keep?", None),
])
def test_deictic_phrases(question, phrase):
    assert is_deictic(question) == phrase


@pytest.mark.parametrize("text, code", [
    ("How many days of leave do I get?", "en"), ("Wie viele Urlaubstage habe ich?", "de"),
    ("Combien de jours de congé ai-je par an?", "fr"), ("¿Cuántos días de vacaciones tengo en el año?", "es"),
    ("Сколько дней отпуска?", "cyrillic"), ("有多少天假期?", "cjk"), ("Hotel limit?", "latin"), ("42", "unknown"),
])
def test_language_guess(text, code):
    assert guess(text) == code


def test_same_language_is_lenient_with_short_questions_and_strict_across_scripts():
    assert same_language("Hotel limit?", "en") == (True, "latin")
    assert same_language("What is the hotel limit?", "de")[0] is False
    assert same_language("Was ist die Hotelgrenze?", "de") == (True, "de")
    assert same_language("Какой лимит?", "en")[0] is False


def test_unanswerable_terms_and_threshold():
    assert distinguishing_terms("EUR 160", "EUR 175") == ["175"]
    assert distinguishing_terms("London", "the Tokyo office") == ["tokyo", "office"]
    pages = {"a.pdf#p1": fold(PAGE_A)}
    sentences = Sentences.of([("a.pdf#p1", PAGE_A)])
    reasons, score = check_unanswerable("Which office in Tokyo runs the cafeteria?", "Mileage", "Tokyo cafeteria",
                                        "a.pdf#p1", pages, sentences, 2.5)
    assert reasons == [] and score < 2.5
    reasons, _ = check_unanswerable("What is the hotel cap per night in breakfast?", "EUR 160", "breakfast",
                                    "a.pdf#p1", pages, sentences, 0.5)
    assert [r.code for r in reasons] == ["changed_term_in_collection", "bm25_above_threshold"]
    reasons, _ = check_unanswerable("Who pays for parking?", "Paris", "Oslo", "a.pdf#p1", pages, sentences, 2.5)
    assert [r.code for r in reasons] == ["original_not_on_page", "changed_term_not_in_question"]


def _draft(status="pending", passed=True, kind="answerable", tags=("paraphrase",)) -> Draft:
    provenance = Provenance("qwen3:4b", "d" * 64, "a" * 64, "b" * 64, 42, "2026-01-01T00:00:00+00:00", False)
    reasons = () if passed else (Reason("quote_not_found", "x"),)
    return Draft(f"a.pdf-p1-{status}-{passed}-{kind}", kind, "a.pdf#p1", "What is the nightly hotel cap?",
                 "Hotel costs are reimbursed up to EUR 160 per night", ("EUR 160",), "number",
                 ("a.pdf#p1",) if kind == "answerable" else (), Verification(passed, reasons, tags),
                 () if status == "pending" else
                 (Decision(status, "wrong" if status == "rejected" else None, "ann", "2026-01-02T00:00:00+00:00"),),
                 provenance)


def test_export_tags_and_what_is_left_out():
    drafts = [_draft("accepted"), _draft("rejected"), _draft("pending"), _draft("pending", passed=False),
              _draft("accepted", kind="unanswerable", tags=("unanswerable",))]
    export = to_cases(drafts)
    assert [c["tags"] for c in export.cases] == [["drafted", "draft:number", "paraphrase"],
                                                 ["drafted", "draft:number"]]
    assert export.cases[1]["abstain"] and export.cases[1]["evidence"] == [] and export.cases[1]["facts"] == []
    assert export.left_out == {"rejected by a human": 1, "failed verification": 1,
                               "pending (no human decision; --include-unreviewed adds them)": 1}
    unreviewed = to_cases(drafts, include_unreviewed=True)
    assert len(unreviewed.cases) == 3 and "unreviewed" in unreviewed.cases[1]["tags"]
    assert "accepted by ann" in to_case(drafts[0])["notes"] and "digest dddddddddddd" in to_case(drafts[0])["notes"]


def test_report_counts_and_rates():
    drafts = [_draft("accepted"), _draft("rejected"), _draft("pending"), _draft("pending", passed=False)]
    report = build_report(drafts)
    assert (report.total.drafts, report.total.passed, report.total.accepted, report.total.rejected) == (4, 3, 1, 1)
    assert report.acceptance_rate == 0.5 and report.pass_rate == 0.75
    assert report.reasons == {"quote_not_found": 1} and report.human_reasons == {"wrong": 1}
    text = render_draft_report(report)
    assert "quote_not_found: 1" in text and "accepted by a human: 50.0% of 2 decided" in text


def test_limits_are_used():
    strict = Limits(min_quote_words=20)
    assert codes(check_draft("What is the nightly hotel cap?", "Hotel costs are reimbursed up to EUR 160 per night",
                             ["EUR 160"], "a.pdf#p1", VIEW, strict)) == ["quote_too_short"]


def test_drafted_and_hand_written_rows_are_summarised_apart():
    from harness.summary import summarize
    from tests.support.rowkit import make_row
    rows = [make_row("h1", {"hit@1": 1.0, "facts": None}, tags=("dev",)),
            make_row("d1", {"hit@1": 0.0, "facts": 1.0}, tags=("drafted", "draft:number")),
            make_row("d2", {"hit@1": 1.0, "facts": 0.0}, tags=("drafted",)),
            make_row("d3", {"hit@1": None, "facts": None}, tags=("drafted",), error="timeout")]
    out = summarize(rows, ["hit@1", "facts"], {}).by_origin
    hand, drafted = out["hand-written"], out["drafted"]
    assert (hand["hit@1"].mean, hand["hit@1"].scored, hand["facts"].mean, hand["facts"].not_applicable) == \
        (1.0, 1, None, 1)
    assert (drafted["hit@1"].mean, drafted["hit@1"].scored, drafted["hit@1"].errored) == (0.5, 2, 1)
    assert summarize(rows[:1], ["hit@1"], {}).by_origin is None  # one origin only: nothing to split


@pytest.mark.parametrize("given, kept", [
    ('"Hotel costs are reimbursed."', "Hotel costs are reimbursed."),
    ("...costs are reimbursed up to EUR 160…", "costs are reimbursed up to EUR 160"),
    ("\u201cMileage is paid at EUR 0.30 per km.\u201d ", "Mileage is paid at EUR 0.30 per km."),
    ("The 'shared' rule", "The 'shared' rule"),
])
def test_quotation_marks_and_ellipses_around_a_quote_are_dropped(given, kept):
    from harness.drafting.verify import strip_wrapping
    assert strip_wrapping(given) == kept


def test_a_case_whose_facts_a_human_changed_drops_the_models_type_tag():
    """Issue #44: the model's `draft:<type>` describes its facts; an edit that changes them drops the tag (the
    notes say so), one that rewords only the question keeps it."""
    base = _draft("accepted")
    original = {"question": base.question, "quote": base.quote, "facts": list(base.facts)}
    reworded = replace(base, question="How much is a hotel night refunded?", original=original)
    rewritten = replace(base, question="Which meal is included in the hotel cost?", facts=("breakfast",),
                        original=original)
    assert "draft:number" in to_case(base)["tags"] and "draft:number" in to_case(reworded)["tags"]
    assert not [t for t in to_case(rewritten)["tags"] if t.startswith("draft:")]
    assert "(the model's type draft:number dropped: the facts changed)" in to_case(rewritten)["notes"]
    assert "dropped" not in to_case(reworded)["notes"]
