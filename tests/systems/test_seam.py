"""What a Python plug-in returns is checked at the seam (issue 19 items 1, 4, 19): surrogates, wrong `details`
types, values JSON cannot hold, hand-built records with NaN or rank 0, `sys.exit`, an empty error. Each is that
case's error row naming the field; the other cases are answered and the run completes."""

from __future__ import annotations

import math
import sys

import pytest

from harness.cases import Case, Evidence
from harness.evaluate import run_evaluation
from harness.records import Citation, Passage, SystemAnswer
from harness.rows import ScoringRules, guarded_row
from harness.runs import read_rows
from harness.settings import RunSettings
from harness.systems.seam import answer_problem
from tests.conftest import SAMPLE_DOCS
from tests.systems.test_systems import HOTEL_PAGE, _cases_file

HOTEL = "Hotel costs are reimbursed up to EUR 160 per night"


def _good() -> SystemAnswer:
    return SystemAnswer(answer="EUR 160 per night", retrieved=(Passage(source_id=HOTEL_PAGE, text=HOTEL, rank=1),),
                        citations=(Citation(source_id=HOTEL_PAGE, quote="reimbursed up to EUR 160 per night"),))


# case id -> what the plug-in returns for it (a callable, so that sys.exit happens inside answer())
BAD = {
    "surrogate-answer": lambda: _good().model_copy(update={"answer": "EUR 160 \ud800"}),
    "surrogate-passage": lambda: _good().model_copy(update={"retrieved": (
        Passage(source_id=HOTEL_PAGE, text=HOTEL + " \udfff", rank=1),)}),
    "surrogate-quote": lambda: _good().model_copy(update={"citations": (
        Citation(source_id=HOTEL_PAGE, quote="EUR 160 \ud83d"),)}),
    "thinking-none": lambda: _good().model_copy(update={"details": {"thinking_chars": None}}),
    "shown-int": lambda: _good().model_copy(update={"details": {"shown": 12345}}),
    "reasons-string": lambda: _good().model_copy(update={"details": {"reasons": "too short"}}),
    "usage-object": lambda: _good().model_copy(update={"usage": {"model": object()}}),
    "usage-nan": lambda: _good().model_copy(update={"usage": {"cost": math.nan}}),
    "score-nan": lambda: _good().model_copy(update={"retrieved": (
        Passage.model_construct(source_id=HOTEL_PAGE, text=HOTEL, rank=1, score=math.nan),)}),
    "rank-zero": lambda: _good().model_copy(update={"retrieved": (
        Passage.model_construct(source_id=HOTEL_PAGE, text=HOTEL, rank=0, score=None),)}),
    "empty-error": lambda: SystemAnswer(error=""),
    "exits": lambda: sys.exit(3),
}
FIELD = {"surrogate-answer": "answer: holds a lone surrogate U+D800", "surrogate-passage": "retrieved.0.text: holds "
         "a lone surrogate U+DFFF", "surrogate-quote": "citations.0.quote: holds a lone surrogate U+D83D",
         "thinking-none": "details.thinking_chars: a NoneType", "shown-int": "details.shown: a int (12345)",
         "reasons-string": "details.reasons: a str ('too short'); give a list of strings",
         "usage-object": "usage.model: a object", "usage-nan": "usage.cost: nan is not a finite number",
         "score-nan": "retrieved.0.score: Input should be a finite number",
         "rank-zero": "retrieved.0.rank: Input should be greater than or equal to 1",
         "empty-error": "error: empty", "exits": "the system called sys.exit(3) while answering"}


class _Hostile:
    def describe(self) -> dict:
        return {"name": "hostile plug-in (test fixture)"}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        return BAD[case_id]() if case_id in BAD else _good()


def _settings(tmp_path, ids, **kw) -> RunSettings:
    return RunSettings(**{"docs": str(SAMPLE_DOCS), "cases": _cases_file(tmp_path, ids), "out": str(tmp_path / "out"),
                          "system": "hostile:factory"} | kw)


@pytest.mark.parametrize("workers", [1, 3])
def test_whatever_a_plugin_returns_ends_as_that_cases_row_and_the_run_completes(tmp_path, workers):
    ids = ["fine-1", *BAD, "fine-2"]
    result = run_evaluation(_settings(tmp_path, ids, workers=workers), system=_Hostile())
    rows = {r.case_id: r for r in read_rows(result.run_dir)}
    assert list(rows) == ids and result.manifest.status == "complete"
    for case_id in ("fine-1", "fine-2"):
        assert rows[case_id].error is None and rows[case_id].metrics["passed"] == 1.0
    for case_id, expected in FIELD.items():
        assert expected in rows[case_id].error, (case_id, rows[case_id].error)
        assert rows[case_id].answer.status == "error"
    assert result.summary.errored == len(BAD)
    (result.run_dir / "rows.jsonl").read_text(encoding="utf-8")  # every byte written is UTF-8


def test_a_row_that_cannot_be_built_or_stored_becomes_an_error_row_inside_the_guard():
    """The guard itself, without the seam's check in front: a surrogate would fail answer_sha256 and the row's
    JSON; building, validating and writing the row belong to the case, not to the run."""
    case = Case(id="c1", question="What is the hotel limit?", evidence=(Evidence(source_id=HOTEL_PAGE),),
                facts=(("160",),), abstain=False)
    row = guarded_row(case, SystemAnswer(answer="x \ud800"), ScoringRules((1,), 4, None), elapsed_ms=1.0)
    assert row.error.startswith("the system's answer could not be stored as a row (UnicodeEncodeError")
    assert "\\ud800" in row.error and row.line().encode("utf-8")


def test_a_sound_answer_passes_the_seam_unchanged():
    assert answer_problem(_good()) is None
    assert answer_problem(_good().model_copy(update={"details": {"shown": "x", "thinking_chars": 3, "reasons": [],
                                                                  "done_reason": None}})) is None
