"""Builders for hand-made test data: `make_row`, a valid `Row` carrying exactly the values a test states, and
`observation`, a metric `Observation` with neutral defaults.

Rows built here are checked against the published row schema, so a test can never compare or review a row
that a real run could not have written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness import metrics as m
from harness.cases import Evidence
from harness.records import (
    AnswerRecord,
    Expected,
    QuoteValidation,
    RetrievedPassage,
    Row,
)
from harness.rows import answer_sha256, validate_row


def make_row(case_id: str, metrics: Mapping[str, float | None], *, tags: Iterable[str] = (), repeat: int = 0,
             reviewed: bool = False, answer: str = "", question: str = "q?", error: str | None = None,
             retrieved: Iterable[str] = ()) -> Row:
    """A row of case `case_id` with these metric values. `reviewed` marks it reviewed with no claims; `answer`
    is the system's answer (its hash keys reviews); `error` makes it an error row; `retrieved` lists the source
    ids of its passages, best first (each `doc.pdf#pN[.M]`)."""
    passages = tuple(_passage(rank, source_id) for rank, source_id in enumerate(retrieved, start=1))
    status = "error" if error is not None else "answered" if answer.strip() else "no_answer"
    record = AnswerRecord(status=status, text=answer, model_answer=answer, answer_sha256=answer_sha256(answer),
                          raw=answer, citations=(), reasons=(error,) if error else (),
                          abstained=None if error else not answer.strip())
    row = Row(case_id=case_id, repeat=repeat, question=question, tags=tuple(tags),
              expected=Expected(abstain=False, evidence=(), facts=()), retrieved=passages, answer=record, usage={},
              error=error, human_claim_review="reviewed" if reviewed else "pending", claims=() if reviewed else None,
              metrics=dict(metrics), fact_results=(), quote_validation=QuoteValidation(status="not_applicable"),
              failure_reasons=(f"error: {error}",) if error else ())
    validate_row(row.to_json())
    return row


def _passage(rank: int, source_id: str) -> RetrievedPassage:
    doc, _, page = source_id.partition("#p")
    number = int(page.split(".")[0])
    return RetrievedPassage(rank=rank, source_id=source_id, page_id=f"{doc}#p{number}", doc_id=doc, page=number,
                            text=f"passage {source_id}")


def observation(*, evidence: Iterable[Evidence | str] = (), facts: Iterable[Iterable[str]] = (),
                should_abstain: bool = False, retrieved: Iterable[m.Retrieved | str] = (), answer: str = "",
                abstained: bool = False, cited: Iterable[str] = (), quotes_valid: bool | None = None,
                claims: Iterable[bool] | None = None, quotes: Iterable[str] | None = None) -> m.Observation:
    """An Observation; plain strings stand for an evidence item without quote or a retrieved page id (ranked in
    the order given, text "text"). `answered` follows `abstained`."""
    items = tuple(Evidence(e) if isinstance(e, str) else e for e in evidence)
    passages = tuple(m.Retrieved(rank, r, "text") if isinstance(r, str) else r
                     for rank, r in enumerate(retrieved, start=1))
    return m.Observation(evidence=items, facts=tuple(tuple(f) for f in facts), should_abstain=should_abstain,
                         retrieved=passages, answer=answer, answered=not abstained, abstained=abstained,
                         cited=tuple(cited), quotes_valid=quotes_valid,
                         claims=None if claims is None else tuple(claims),
                         quotes=None if quotes is None else tuple(quotes))
