"""Record = replay (issue 40): a live run of a Python plug-in and `rag-eval score` of that run's own `saved/` files
give byte-identical rows, every citation with its own quote. The outputs are generated (hypothesis): several
citations of one page in any order, duplicates, empty and fabricated quotes, empty answers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.records import Citation, Passage, Row, SystemAnswer
from harness.runs import read_rows
from harness.saved.case_rows import citation_quotes
from harness.saved.layout import load_saved
from harness.saved.to_run import score_outputs
from harness.settings import RunSettings
from pdfrag.pdfs import read_pdf
from tests.conftest import HANDBOOK

PAGES = {p.source_id: p.text for p in read_pdf(HANDBOOK).pages}
IDS = sorted(PAGES)
FABRICATED = "the handbook grants every employee a paid sabbatical of ninety days"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 5]


SENTENCES = {sid: _sentences(text) for sid, text in PAGES.items()}


class Scripted:
    """Answers each case id with the `SystemAnswer` its script names (a test's table, not a model)."""

    def __init__(self, script: dict[str, SystemAnswer]):
        self.script = script

    def describe(self) -> dict:
        return {"name": "scripted plug-in (test fixture)"}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        return self.script[case_id]


@st.composite
def _quote(draw, sid: str) -> str:
    kind = draw(st.sampled_from(["real", "real", "fabricated", "empty", "other page"]))
    if kind == "real":
        return draw(st.sampled_from(SENTENCES[sid]))
    if kind == "other page":
        return draw(st.sampled_from(SENTENCES[draw(st.sampled_from(IDS))]))
    return FABRICATED if kind == "fabricated" else ""


@st.composite
def _output(draw) -> SystemAnswer:
    retrieved = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
    cited = draw(st.lists(st.sampled_from(retrieved + IDS[:1]), max_size=4))
    citations = [Citation(source_id=sid, quote=draw(_quote(sid))) for sid in cited]
    if citations and draw(st.booleans()):  # the same citation twice
        citations.append(draw(st.sampled_from(citations)))
    answer = draw(st.sampled_from(["", *(q.quote for q in citations if q.quote), "EUR 160 per night."]))
    return SystemAnswer(answer=answer, abstained=not answer and draw(st.booleans()),
                        retrieved=tuple(Passage(source_id=sid, text=PAGES[sid], rank=i)
                                        for i, sid in enumerate(retrieved, 1)),
                        citations=tuple(citations))


def _cases(path: Path, n: int) -> str:
    path.write_text("".join(json.dumps({
        "id": f"c{i}", "question": "What is the hotel limit per night?", "facts": ["160", ["25", "twenty-five"]],
        "evidence": [{"source_id": IDS[1]}], "abstain": False}) + "\n" for i in range(n)))
    return str(path)


def _without_timing(row: Row) -> str:
    """The row's line with its usage left out: a live run times each case, a score has no time to report."""
    return row.model_copy(update={"usage": {}}).line()


def _live_and_replayed(tmp: Path, outputs: list[SystemAnswer]) -> tuple[list[Row], list[Row], list[Row]]:
    """The rows of a live run of `outputs`, of the library's score of its saved/ files and of `rag-eval score`."""
    script = {f"c{i}": out for i, out in enumerate(outputs)}
    docs = tmp / "docs"
    if not docs.exists():
        docs.mkdir()
        shutil.copy(HANDBOOK, docs / HANDBOOK.name)
    out, scored = tmp / "runs", tmp / "scored"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(scored, ignore_errors=True)
    run = run_evaluation(RunSettings(system="scripted:factory", docs=str(docs), cases=_cases(tmp / "cases.jsonl",
                                     len(outputs)), out=str(out), min_quote_words=1), system=Scripted(script))
    live = read_rows(run.run_dir)
    replayed = score_outputs(load_saved(run.run_dir / "saved" / "cases.jsonl")).rows
    assert main(["score", "--cases", str(run.run_dir / "saved" / "cases.jsonl"), "--out", str(scored),
                 "--workers", "1", "--json"]) == 0
    [scored_dir] = scored.iterdir()
    return live, list(replayed), read_rows(scored_dir)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(outputs=st.lists(_output(), min_size=1, max_size=4))
def test_a_live_run_and_the_score_of_its_saved_files_give_byte_identical_rows(tmp_path, outputs):
    live, replayed, by_command = _live_and_replayed(tmp_path, outputs)
    assert [_without_timing(r) for r in live] == [_without_timing(r) for r in replayed] == \
        [_without_timing(r) for r in by_command]
    for row, output in zip(live, outputs):
        assert [(c.source_id, c.quote) for c in row.answer.citations] == \
            [(c.source_id, c.quote) for c in output.citations]


def test_a_fabricated_quote_before_a_real_one_of_the_same_page_fails_both_ways(tmp_path):
    page = IDS[1]
    real = next(s for s in SENTENCES[page] if "160" in s)
    fabricated = SystemAnswer(answer=real, retrieved=(Passage(source_id=page, text=PAGES[page], rank=1),),
                              citations=(Citation(source_id=page, quote=FABRICATED),
                                         Citation(source_id=page, quote=real)))
    live, replayed, [by_command] = _live_and_replayed(tmp_path, [fabricated])
    for row in (live[0], replayed[0], by_command):
        assert row.answer.status == "invalid_citation" and row.metrics["quote_valid"] == 0.0
        assert [c.valid for c in row.answer.citations] == [False, True]
        assert [c.quote for c in row.answer.citations] == [FABRICATED, real]
    assert _without_timing(live[0]) == _without_timing(replayed[0]) == _without_timing(by_command)


@pytest.mark.parametrize("cited, saved, quotes", [
    (("a", "a", "b"), [{"source_id": "a", "quote": "x"}, {"source_id": "b", "quote": "z"},
                       {"source_id": "a", "quote": "y"}], ("x", "y", "z")),   # each id's entries in order
    (("a", "a"), [{"source_id": "a", "quote": "x"}], ("x", "")),              # none left: no quote
    (("a", "a", "b"), {"a": "x", "b": "z"}, ("x", "x", "z")),                 # keyed by source id (older files)
    (("a",), None, ("",)),
    (("a",), [{"source_id": "a"}, "junk"], ("",)),
])
def test_citation_quotes_pair_each_citation_with_its_own_entry(cited, saved, quotes):
    assert citation_quotes(cited, saved) == quotes


def test_a_file_whose_quotes_are_keyed_by_source_id_is_still_read(tmp_path):
    """Older saved files hold `metadata.citations` as {source_id: quote}: each citation of an id gets that quote."""
    page = IDS[1]
    real = next(s for s in SENTENCES[page] if "160" in s)
    case = {"case_id": "old", "question": "What is the hotel limit?", "expected_chunk_ids": [page],
            "required_points": ["160"], "candidate_answer": real, "cited_chunk_ids": [page, page],
            "should_abstain": False, "candidate_abstains": False, "retrieved_chunk_ids": [page],
            "metadata": {"citations": {page: real}, "min_quote_words": 1}}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "chunks.jsonl").write_text(json.dumps({"chunk_id": page, "text": PAGES[page]}) + "\n")
    [row] = score_outputs(load_saved(tmp_path / "cases.jsonl")).rows
    assert [(c.quote, c.valid) for c in row.answer.citations] == [(real, True), (real, True)]
    assert row.metrics["quote_valid"] == row.metrics["grounded"] == 1.0
    assert any(w.startswith("duplicate citation:") for w in row.warnings)
