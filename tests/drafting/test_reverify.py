"""Issue #19 item 9: `draft cases` runs the deterministic checks again instead of trusting `verification.passed`
from the drafts file (a file edited by hand, or by a tool, can say anything)."""

from __future__ import annotations

import json
from dataclasses import replace

from harness.cli import main
from harness.drafting.records import Decision, read_drafts, write_drafts
from tests.support import draft_rules as rules


def _accepted(draft):
    return draft.with_decision(Decision("accepted", None, "ann", "2026-01-01T00:00:00+00:00"))


def test_draft_cases_leaves_out_drafts_the_file_wrongly_marks_passed(drafts_file, tmp_path, capsys):
    drafts = read_drafts(drafts_file)
    by_question = {d.question: i for i, d in enumerate(drafts)}
    hotel, missing = by_question[rules.GOOD_HOTEL["question"]], by_question[rules.FACT_MISSING["question"]]
    assert drafts[hotel].verification.passed and not drafts[missing].verification.passed
    drafts[hotel] = _accepted(drafts[hotel])
    # forged: a fact the quote does not hold
    drafts[missing] = _accepted(replace(drafts[missing], verification=replace(drafts[missing].verification,
                                                                              passed=True, reasons=())))
    # and one the file passes although its question now points at the page ("according to the text")
    copy = by_question[rules.GOOD_LAPTOP["question"]]
    drafts[copy] = _accepted(replace(drafts[copy], question="According to the text, how often do staff get a new "
                                                            "computer?"))
    write_drafts(drafts_file, drafts)
    cases = tmp_path / "cases.jsonl"
    assert main(["draft", "cases", str(drafts_file), "--out", str(cases)]) == 0
    written = [json.loads(line)["question"] for line in cases.read_text().splitlines()]
    assert written == [rules.GOOD_HOTEL["question"]]
    captured = capsys.readouterr()
    assert "8 failed verification" in captured.out  # 6 failed in the file, 2 more when checked again
    assert "warning: 2 draft(s) marked passed" in captured.err and "when run again and were left out" in captured.err


def test_an_unanswerable_draft_the_documents_answer_fails_again():
    from harness.drafting.collection import Collection
    from harness.drafting.decisions import reverify
    from harness.drafting.records import Draft, Verification
    from pdfrag.chunking import ChunkSettings
    from pdfrag.pdfs import read_documents
    from tests.conftest import HANDBOOK
    collection = Collection.of(read_documents(HANDBOOK), ChunkSettings())
    sound = Draft("u1", "unanswerable", "handbook.pdf#p2", question="Which tablet do designers receive?",
                  verification=Verification(True))
    assert reverify(sound, collection) == sound
    forged = replace(sound, question="What is the hotel limit per night in London and Paris?")
    again = reverify(forged, collection)
    assert not again.verification.passed and again.verification.reasons[0].code == "bm25_above_threshold"
