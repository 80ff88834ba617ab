"""Record and replay: every run also writes its outputs in the saved layout `rag-eval score` reads.

`<run>/saved/cases.jsonl` holds per case the question, labels and what the system did (retrieved ids, answer,
cited ids, abstained), with the evidence quotes and citation quotes in `metadata` (`citations`: one {source_id,
quote} per citation, in the citations' order, so two citations of one page keep their own quotes);
`<run>/saved/chunks.jsonl` holds every retrieved passage once. `rag-eval score --cases <run>/saved/cases.jsonl`
then recomputes the run's retrieval and answer checks from these files alone.
Errored rows are left out: there is nothing to score.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pdfrag.safe_files import atomic_write_text

from ..records import Row

SAVED = "saved"


def write_replay(run_dir: Path, rows: Sequence[Row], *, pages: Mapping[str, str] | None = None,
                 min_quote_words: int = 1) -> Path:
    """Write `saved/cases.jsonl` and `saved/chunks.jsonl` for the first repeat of every unerrored row. Every
    expected page is a chunk too (its page text from `pages`), so labels resolve when chunks are smaller than
    pages or an expected page was never retrieved; the run's `min_quote_words` travels in each case."""
    folder = Path(run_dir) / SAVED
    folder.mkdir(exist_ok=True)
    chunks: dict[str, str] = {}
    cases = []
    for row in rows:
        if row.repeat != 0 or row.errored:
            continue
        for passage in row.retrieved:
            chunks.setdefault(passage.source_id, passage.text)
        for item in row.expected.evidence:
            if pages is not None and item.source_id in pages:
                chunks.setdefault(item.source_id, pages[item.source_id])
        cases.append(_case(row, min_quote_words))
    atomic_write_text(folder / "chunks.jsonl", "".join(
        json.dumps({"chunk_id": cid, "text": text}, ensure_ascii=False) + "\n" for cid, text in chunks.items()))
    atomic_write_text(folder / "cases.jsonl", "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    return folder


def _case(row: Row, min_quote_words: int) -> dict:
    abstained = row.answer.abstained if row.answer.abstained is not None else row.answer.status != "answered"
    return {
        "case_id": row.case_id, "question": row.question,
        "expected_chunk_ids": [e.source_id for e in row.expected.evidence],
        "required_points": [list(f) for f in row.expected.facts],
        "candidate_answer": row.answer.model_answer,
        "cited_chunk_ids": [c.source_id for c in row.answer.citations],
        "should_abstain": row.expected.abstain, "candidate_abstains": abstained,
        "retrieved_chunk_ids": [p.source_id for p in row.retrieved],
        "metadata": {"evidence": [e.model_dump(exclude_none=True) for e in row.expected.evidence],
                     "citations": [{"source_id": c.source_id, "quote": c.quote} for c in row.answer.citations],
                     "status": row.answer.status, "tags": list(row.tags), "min_quote_words": min_quote_words},
    }
