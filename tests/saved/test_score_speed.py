"""Issue 31's speed work on `rag-eval score` keeps every row's bytes: what is cached or built once gives the rows a
fresh computation gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.runs import read_rows
from harness.saved import case_rows
from harness.saved.layout import SavedCase, SavedChunk, SavedClaim, load_saved
from harness.saved.to_run import score_rows, score_saved, score_to_run

WORKSHOP = Path(__file__).resolve().parents[2] / "sample_docs" / "workshop"
COPIES = 3
LEXICAL = case_rows.Lexical.warning_for(2)


def _replicated(folder: Path) -> Path:
    """The workshop in the JSONL layout, each case (and its claims) `COPIES` times under ids `<id>~<copy>`."""
    saved = load_saved(WORKSHOP / "cases.csv")
    folder.mkdir()
    cases = [{**c.to_json(), "case_id": f"{c.case_id}~{n}"} for n in range(COPIES) for c in saved.cases]
    claims = [{**c.to_json(), "case_id": f"{case.case_id}~{n}"} for n in range(COPIES) for case in saved.cases
              for c in saved.claims if c.case_id == case.case_id]
    for name, records in (("cases", cases), ("chunks", [c.to_json() for c in saved.chunks]), ("claims", claims)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder / "cases.jsonl"


def test_a_repeated_case_scores_to_the_bytes_of_its_first_copy(tmp_path):
    """Copies 1 and 2 meet every cache warm (lexical search per question, folded facts, judging settings); each
    of their lines is the first copy's line but for the case id, and the first copy's rows are the workshop's."""
    scored = score_to_run(_replicated(tmp_path / "saved"), out=tmp_path / "out")
    lines = (scored.run_dir / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    workshop = score_saved(WORKSHOP / "cases.csv").rows
    assert len(lines) == COPIES * len(workshop) and sum(1 for r in workshop if LEXICAL in r.warnings) == 3
    for n in range(COPIES):
        copy = lines[n * len(workshop):(n + 1) * len(workshop)]
        assert [line.replace(f'"case_id":"{r.case_id}~{n}"', f'"case_id":"{r.case_id}"', 1)
                for line, r in zip(copy, workshop)] == [r.line() for r in workshop]
    assert [r.case_id for r in read_rows(scored.run_dir)][:2] == ["W01~0", "W02~0"]


def test_the_lexical_cache_keeps_its_bound_and_gives_a_fresh_searchs_ids(monkeypatch):
    texts = ["late entry rules", "a dog", "parking at night"]
    chunks = [SavedChunk(chunk_id=f"C{i}", text=text) for i, text in enumerate(texts)]
    lexical = case_rows.Lexical(chunks, 2)
    fresh = {q: case_rows.Lexical(chunks, 2).top(q) for q in ("late entry", "dog", "night parking")}
    monkeypatch.setattr(case_rows.Lexical, "CACHED", 2)
    for question in ("late entry", "dog", "night parking", "late entry", "dog"):
        assert lexical.top(question) == fresh[question]
        assert len(lexical._seen) <= 2
    assert list(lexical._seen) == ["late entry", "dog"]  # the oldest question went first


def test_a_case_read_from_json_is_the_case_written(tmp_path):
    """The one-pass reader keeps the round trip: lists become tuples at every depth, a lone phrase is one point,
    an unknown key is refused as it is in a file."""
    case = SavedCase(case_id="Q1", question="What?", expected_chunk_ids=("C1",),
                     required_points=(("a", "b"), ("c",)), candidate_answer="an answer",
                     cited_chunk_ids=("C1", "C2"), should_abstain=False, candidate_abstains=False,
                     retrieved_chunk_ids=("C2", "C1"), metadata={"tags": ["x"], "evidence": [{"source_id": "C1"}]})
    assert SavedCase.from_json(case.to_json()) == case
    lone = SavedCase.from_json({**case.to_json(), "required_points": ["a", ["b", "c"]]})
    assert lone.required_points == (("a",), ("b", "c")) and lone.metadata == case.metadata
    with pytest.raises(ValidationError, match="later_field"):
        SavedCase.from_json({**case.to_json(), "later_field": 1})
    claim = SavedClaim(case_id="Q1", claim="A claim.", support_chunk_ids=("C1",))
    assert SavedClaim.from_json(claim.to_json()) == claim and SavedClaim.from_json(claim.to_json()).supported
    chunks = [SavedChunk(chunk_id="C1", text="a b"), SavedChunk(chunk_id="C2", text="c")]
    rows = list(score_rows([(case, (claim,))], chunks, has_claims=True))
    assert rows[0].fact_results[0].fact == ("a", "b")
