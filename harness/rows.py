"""One row per case: the case, what the answer path did, every metric, and deterministic failure reasons."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources
from typing import Sequence

import jsonschema

from chatbot.answer import Answer
from chatbot.text import normalize

from . import metrics as m
from .cases import Case

ROW_FORMAT = 1


def answer_sha256(text: str) -> str:
    """Key for human reviews: the normalised answer text, so whitespace changes do not reopen a review."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()


def build_row(case: Case, answer: Answer, *, ks: Sequence[int], elapsed_ms: float, repeat: int = 0) -> dict:
    """The row of one case. An answer with an error still gets a row whose metrics are all null."""
    retrieved = [{"rank": h.rank, "source_id": h.chunk.source_id, "page_id": h.chunk.page_id,
                  "doc_id": h.chunk.doc_id, "page": h.chunk.page, "score": round(h.score, 6),
                  "text": h.chunk.text} for h in answer.hits]
    return {
        "format": ROW_FORMAT,
        "case_id": case.id,
        "repeat": repeat,
        "question": case.question,
        "tags": list(case.tags),
        "expected": {"abstain": case.abstain, "evidence": case.to_dict()["evidence"],
                     "facts": [list(f) for f in case.facts]},
        "retrieved": retrieved,
        "answer": {"status": answer.status, "text": answer.text, "model_answer": answer.model_answer,
                   "answer_sha256": answer_sha256(answer.model_answer), "raw": answer.raw,
                   "citations": [c.to_dict() for c in answer.citations], "reasons": list(answer.reasons),
                   "thinking_chars": answer.thinking_chars, "done_reason": answer.done_reason},
        "usage": dict(answer.usage) | {"elapsed_ms": round(elapsed_ms, 3)},
        "error": answer.error,
        "human_claim_review": "pending",
        "claims": None,
    } | score(case, answer.status, answer.model_answer, bool(answer.citations), retrieved, ks=ks,
              citation_reasons=[c.reason for c in answer.citations if not c.valid], error=answer.error)


def score(case: Case, status: str, model_answer: str, has_citations: bool, retrieved: list[dict], *,
          ks: Sequence[int], citation_reasons: Sequence[str | None] = (), error: str | None = None) -> dict:
    """Metrics, fact results, quote validation and failure reasons, from a row's own stored data.
    Rescoring a saved run calls this with the stored values, so the numbers always derive the same way."""
    refs = [m.Retrieved(r["rank"], r["page_id"], r["text"]) for r in retrieved]
    metrics: dict[str, float | None] = dict.fromkeys(m.metric_names(ks))
    facts = [{"fact": list(f), "found": m.fact_found(model_answer, f)} for f in case.facts]
    if error is None:
        for k in ks:
            metrics[f"hit@{k}"] = m.hit_at_k(refs, case.evidence, k)
            metrics[f"recall@{k}"] = m.recall_at_k(refs, case.evidence, k)
        metrics["rr"] = m.reciprocal_rank(refs, case.evidence)
        metrics["facts"] = m.fact_recall(model_answer, case.facts, abstain=case.abstain)
        metrics["behaviour"] = m.behaviour(case.abstain, status == "answered")
        metrics["quote_valid"] = m.quote_validity(status, bool(has_citations))
    quote = {None: "not_applicable", 1.0: "passed", 0.0: "failed"}[metrics["quote_valid"]]
    return {
        "metrics": metrics,
        "fact_results": facts,
        "quote_validation": {"status": quote, "reasons": [r for r in citation_reasons if r] if quote == "failed" else []},
        "failure_reasons": failure_reasons(case, status, refs, facts, citation_reasons, error, k_max=max(ks)),
    }


def failure_reasons(case: Case, status: str, refs: list[m.Retrieved], facts: list[dict],
                    citation_reasons: Sequence[str | None], error: str | None, *, k_max: int) -> list[str]:
    """Short sentences, always in the same order: error, retrieval, behaviour, citations, facts."""
    if error is not None:
        return [f"error: {error}"]
    reasons = []
    for item in case.evidence:
        rank = m.first_rank(refs, item)
        what = item.source_id + (f" containing {item.quote!r}" if item.quote else "")
        if rank is None:
            reasons.append(f"expected {what}, not retrieved in the top {len(refs)}")
        elif rank > 1:
            reasons.append(f"expected {what}, first retrieved at rank {rank}")
    answered = status == "answered"
    if case.abstain and answered:
        reasons.append("answered an unanswerable question")
    elif not case.abstain and not answered:
        reasons.append(f"gave no answer to an answerable question (status {status})")
    reasons.extend(f"citation: {r}" for r in citation_reasons if r)
    if status == "malformed_output":
        reasons.append("the model's reply was malformed")
    if not case.abstain:
        reasons.extend(f"fact {f['fact'][0]!r} not in answer" for f in facts if not f["found"])
    return reasons


@lru_cache(maxsize=1)
def row_validator() -> jsonschema.Draft202012Validator:
    text = resources.files("harness").joinpath("schemas/row.schema.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def validate_row(row: dict) -> None:
    """Raise ValueError naming the first field that breaks the published row schema."""
    error = next(iter(sorted(row_validator().iter_errors(row), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "row"
        raise ValueError(f"row for case {row.get('case_id')!r} breaks the row schema at {where}: {error.message}")
