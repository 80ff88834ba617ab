"""Offline scoring of saved outputs: the same rows, registry and run directory as a live run; no model calls.

Each saved case becomes a `Case` (labels) and a `SystemAnswer` (what the answerer did), judged by
`harness.rows.build_row` like any live answer. The tutorial's five checks (retrieval recall, citation precision,
claim support, key-point coverage, abstention) are entries of the one metric registry, never merged into one
score; `passed` is the tutorial's "passes" column. Claim annotations become a reviewed row's claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chatbot import __version__
from chatbot.lexical import LexicalIndex
from chatbot.versions import software_versions

from ..cases import Case, Evidence
from ..chart import svg_bars
from ..metrics import REGISTRY, TUTORIAL_CHECKS, metric_names
from ..records import (
    MANIFEST_FORMAT,
    Citation,
    ClaimRecord,
    Manifest,
    Passage,
    Row,
    Summary,
    SystemAnswer,
    VersionsRecord,
    in_bulk,
)
from ..rows import Judging, build_row
from ..runs import MANIFEST, SUMMARY, new_run_dir, utc_now, write_json, write_rows
from ..summary import summarize
from .layout import SavedCase, SavedClaim, SavedOutputs, load_saved

__all__ = ["CHECK_LABELS", "ScoreResult", "chart_bars", "score_outputs", "score_saved", "write_run"]

KS = (1, 2, 4)
CHECK_LABELS = {name: REGISTRY[name].label for name in TUTORIAL_CHECKS}
FAILED_TABLE, CHART = "failed.txt", "chart.svg"


@dataclass(frozen=True)
class ScoreResult:
    """One row per case in the cases file's order, their summary, the manifest to write, and warnings about
    the inputs (e.g. no claims file: claim support cannot be scored)."""

    rows: tuple[Row, ...]
    summary: Summary
    manifest: Manifest
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.metrics.get("passed") != 1.0)


@in_bulk
def score_outputs(saved: SavedOutputs, *, k: int = 2, na_as_pass: bool = False) -> ScoreResult:
    """Score loaded outputs; cases without saved retrieved ids get the top `k` chunks of the lexical retriever."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    has_claims = any(f.role == "claims" for f in saved.files)
    claims = saved.claims_by_case()
    texts = {c.chunk_id: c.text for c in saved.chunks}
    lexical = _Lexical(saved, k)
    rows = []
    for case in saved.cases:
        retrieved, by = (case.retrieved_chunk_ids, "") if case.retrieved_chunk_ids is not None else \
            (lexical.top(case.question), f"retrieved ids from the lexical retriever (top {k})")
        meta = case.metadata or {}
        judging = Judging(KS, check_quotes=bool(meta.get("citations")), min_quote_words=meta.get("min_quote_words", 1))
        reviewed = _claim_records(claims.get(case.case_id, ())) if has_claims else None
        rows.append(build_row(_case(case), _answer(case, retrieved, texts), judging, elapsed_ms=0.0,
                              warnings=(by,) if by else (), claims=reviewed))
    warnings = () if has_claims else ("no claims file was found or given, so claim support is not scored (n/a for "
                                      "every case); pass --claims FILE or put claims.<ext> beside the cases file",)
    manifest = Manifest(format=MANIFEST_FORMAT, run_id="", status="complete", started_at=utc_now(),
                        ended_at=utc_now(), package_version=__version__,
                        versions=VersionsRecord.model_validate(software_versions()),
                        settings={"k": list(KS), "lexical_k": k, "na_as_pass": na_as_pass},
                        system={"name": "saved outputs", "system": "saved outputs scored offline (rag-eval score)"},
                        inputs={"saved": [f.to_json() for f in saved.files]}, metrics=metric_names(KS),
                        collection={"chunks": len(saved.chunks) or None})
    summary = summarize(rows, metric_names(KS), manifest.collection.to_json(), na_as_pass=na_as_pass)
    return ScoreResult(tuple(rows), summary, manifest, warnings)


def score_saved(cases_path: str | Path, chunks_path: str | Path | None = None,
                claims_path: str | Path | None = None, *, k: int = 2, na_as_pass: bool = False) -> ScoreResult:
    """Load saved outputs (CSV or JSONL, see `harness.saved.layout`) and score every case; no model is called."""
    return score_outputs(load_saved(cases_path, chunks_path, claims_path), k=k, na_as_pass=na_as_pass)


def write_run(result: ScoreResult, out: str | Path, *, label: str | None = None, failed_table: str = "") -> Path:
    """A normal run directory under `out` (rows, manifest, summary), plus the failed-case table and chart, so
    compare, report, review and rescore work on it."""
    run_dir = new_run_dir(out, label or "score")
    manifest = result.manifest.model_copy(update={"run_id": run_dir.name})
    write_rows(run_dir, result.rows)  # all at once: validated, then one atomic write
    write_json(run_dir / SUMMARY, result.summary.to_json())
    write_json(run_dir / MANIFEST, manifest.to_json())
    (run_dir / FAILED_TABLE).write_text(failed_table + "\n", encoding="utf-8")
    (run_dir / CHART).write_text(svg_bars(chart_bars(result.summary), title=chart_title(result.summary)),
                                 encoding="utf-8")
    return run_dir


def chart_bars(summary: Summary) -> list[tuple[str, float | None]]:
    """One (label, mean) bar per tutorial check."""
    return [(label, summary.mean(name)) for name, label in CHECK_LABELS.items()]


def chart_title(summary: Summary) -> str:
    na = "n/a counted as 1.0" if summary.na_as_pass else "n/a left out"
    return f"{summary.rows} cases, {summary.passes} pass every check ({na})"


class _Lexical:
    """BM25 over the saved chunks, built on first use."""

    def __init__(self, saved: SavedOutputs, k: int):
        self.saved, self.k = saved, k
        self._index: LexicalIndex | None = None

    def top(self, question: str) -> tuple[str, ...]:
        if self._index is None:
            self._index = LexicalIndex([c.text for c in self.saved.chunks])
        return tuple(self.saved.chunks[i].chunk_id for i, _ in self._index.search(question, self.k))


def _case(case: SavedCase) -> Case:
    meta = case.metadata or {}
    evidence = tuple(Evidence(e["source_id"], e.get("quote")) for e in meta["evidence"]) if "evidence" in meta \
        else tuple(Evidence(cid) for cid in dict.fromkeys(case.expected_chunk_ids))
    return Case(id=case.case_id, question=case.question, evidence=evidence, facts=case.required_points,
                abstain=case.should_abstain, tags=tuple(meta.get("tags", ())))


def _answer(case: SavedCase, retrieved: Sequence[str], texts: dict[str, str]) -> SystemAnswer:
    quotes = {c["source_id"]: c["quote"] for c in (case.metadata or {}).get("citations", ())}
    return SystemAnswer(
        answer=case.candidate_answer, abstained=case.candidate_abstains, usage={}, raw="", malformed=None,
        error=None, details={},
        retrieved=tuple(Passage(source_id=cid, text=texts.get(cid, ""), rank=i, score=None)
                        for i, cid in enumerate(retrieved, 1)),
        citations=tuple(Citation(source_id=cid, quote=quotes.get(cid, ""))
                        for cid in case.cited_chunk_ids))


def _claim_records(claims: Sequence[SavedClaim]) -> list[ClaimRecord]:
    return [ClaimRecord(claim=c.claim, note="", verdict="supported" if c.supported else "unsupported",
                        source_id=c.support_chunk_ids[0] if c.support_chunk_ids else None) for c in claims]
