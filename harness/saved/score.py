"""Offline scoring of saved outputs: the same rows, registry and run directory as a live run; no model calls.

Each saved case becomes a `Case` (labels) and a `SystemAnswer` (what the answerer did), judged by
`harness.rows.build_row` like any live answer. The tutorial's five checks (retrieval recall, citation precision,
claim support, key-point coverage, abstention) are entries of the one metric registry, never merged into one
score; `passed` is the tutorial's "passes" column. Claim annotations become a reviewed row's claims.

`score_to_run` is `rag-eval score`: each case is read (once, checked as it is read), scored and written in turn
(rows.jsonl through a temporary file renamed into place at the end), the summary accumulated as rows pass
(`harness.summary`), and of the failed cases the first `FAILED_SHOWN` kept with their count; memory does not grow
with the rows. Bad input is one InputError at the end of the reading, and the run directory begun is removed.
`score_saved` and `score_outputs` return every row in memory (small inputs, tests), from the same row builder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatbot import __version__
from chatbot.lexical import LexicalIndex
from chatbot.store import atomic_write_text, atomic_writer
from chatbot.versions import software_versions

from ..cases import Case, Evidence
from ..chart import fmt, svg_bars
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
from ..runs import MANIFEST, ROWS, SUMMARY, new_run_dir, utc_now, write_json
from ..summary import Summarizer, summarize
from .layout import SavedCase, SavedChunk, SavedClaim, SavedOutputs, SavedStream, read_saved
from .records import InputFile

__all__ = ["CHECK_LABELS", "FAILED_SHOWN", "Sample", "ScoreResult", "ScoredRun", "chart_bars", "failed_table",
           "score_outputs", "score_rows", "score_saved", "score_to_run", "write_run"]

KS = (1, 2, 4)
CHECK_LABELS = {name: REGISTRY[name].label for name in TUTORIAL_CHECKS}
FAILED_TABLE, CHART = "failed.txt", "chart.svg"
FAILED_SHOWN = 50  # failed cases shown with their checks and reasons; every row: `rag-eval export`
LEXICAL_SHOWN = 20  # case ids named as scored with the lexical retriever's ids


@dataclass(frozen=True)
class Sample:
    """The first few of many (in order), and how many there were."""

    items: tuple[Any, ...]
    total: int


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


@dataclass(frozen=True)
class ScoredRun:
    """A scored run directory: its summary and manifest, the input warnings, the first failed rows (`failed`) and
    the first cases whose retrieved ids came from the lexical retriever (`lexical`), each with its count."""

    run_dir: Path
    summary: Summary
    manifest: Manifest
    warnings: tuple[str, ...]
    failed: Sample
    lexical: Sample


def score_rows(cases: Iterable[tuple[SavedCase, Sequence[SavedClaim]]], chunks: Sequence[SavedChunk], *,
               has_claims: bool, k: int = 2) -> Iterator[Row]:
    """The row of each (case, its claims) in turn; cases without saved retrieved ids get the top `k` chunks of
    the lexical retriever. Without a claims file (`has_claims` False) no row is reviewed."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return _rows(cases, chunks, has_claims, k)


def _rows(cases: Iterable[tuple[SavedCase, Sequence[SavedClaim]]], chunks: Sequence[SavedChunk], has_claims: bool,
          k: int) -> Iterator[Row]:
    passages = _Passages({c.chunk_id: c.text for c in chunks})
    lexical = _Lexical(chunks, k)
    for case, claims in cases:
        retrieved, by = (case.retrieved_chunk_ids, "") if case.retrieved_chunk_ids is not None else \
            (lexical.top(case.question), lexical.warning)
        meta = case.metadata or {}
        judging = _judging(bool(meta.get("citations")), meta.get("min_quote_words", 1))
        reviewed = _claim_records(claims) if has_claims else None
        yield build_row(_case(case), _answer(case, retrieved, passages), judging, elapsed_ms=0.0,
                        warnings=(by,) if by else (), claims=reviewed)


def _judging(check_quotes: bool, min_quote_words: Any) -> Judging:
    """The judging of a case, one per setting: a case's metadata sets it (its value free-form, so only a whole
    number is shared)."""
    if isinstance(min_quote_words, int):
        return _shared_judging(check_quotes, min_quote_words)
    return Judging(KS, check_quotes=check_quotes, min_quote_words=min_quote_words)


@lru_cache(maxsize=64)
def _shared_judging(check_quotes: bool, min_quote_words: int) -> Judging:
    return Judging(KS, check_quotes=check_quotes, min_quote_words=min_quote_words)


def score_outputs(saved: SavedOutputs, *, k: int = 2, na_as_pass: bool = False) -> ScoreResult:
    """Score loaded outputs, every row in memory."""
    return _in_memory(saved.with_claims(), saved.chunks, saved.has_claims, lambda: saved.files, k, na_as_pass)


def score_saved(cases_path: str | Path, chunks_path: str | Path | None = None,
                claims_path: str | Path | None = None, *, k: int = 2, na_as_pass: bool = False) -> ScoreResult:
    """Check saved outputs (CSV or JSONL, see `harness.saved.layout`) and score every case into memory; no model is
    called. `score_to_run` writes a run directory instead, in memory that does not grow with the cases."""
    return read_saved(cases_path, chunks_path, claims_path,
                      use=lambda stream: _in_memory(stream, stream.chunks, stream.has_claims, lambda: stream.files, k,
                                                    na_as_pass))


@in_bulk
def _in_memory(cases: Iterable[tuple[SavedCase, Sequence[SavedClaim]]], chunks: Sequence[SavedChunk],
               has_claims: bool, files: Callable[[], Sequence[InputFile]], k: int, na_as_pass: bool) -> ScoreResult:
    rows = tuple(score_rows(cases, chunks, has_claims=has_claims, k=k))
    manifest = _manifest(files(), len(chunks), k, na_as_pass)
    summary = summarize(rows, manifest.metrics, manifest.collection.to_json(), na_as_pass=na_as_pass, stability=False)
    return ScoreResult(rows, summary, manifest, _warnings(has_claims))


def score_to_run(cases_path: str | Path, chunks_path: str | Path | None = None,
                 claims_path: str | Path | None = None, *, out: str | Path, label: str | None = None, k: int = 2,
                 na_as_pass: bool = False) -> ScoredRun:
    """`rag-eval score`: score saved outputs a case at a time, as they are read and checked, into a new run
    directory under `out` (rows, manifest, summary, the failed-case table and the chart), so compare, report,
    review and rescore work on it. Bad input is one InputError, and the directory begun for it is removed."""

    def scored(stream: SavedStream) -> ScoredRun:
        manifest = _manifest((), len(stream.chunks), k, na_as_pass)  # the files' hashes are known at the end
        rows = score_rows(stream, stream.chunks, has_claims=stream.has_claims, k=k)
        return _write(rows, manifest, out, label, _warnings(stream.has_claims), na_as_pass, lambda: stream.files)

    return read_saved(cases_path, chunks_path, claims_path, use=scored)


def write_run(result: ScoreResult, out: str | Path, *, label: str | None = None) -> Path:
    """A run directory under `out` for rows scored in memory, as `score_to_run` writes it."""
    return _write(result.rows, result.manifest, out, label, result.warnings, result.summary.na_as_pass).run_dir


def _write(rows: Iterable[Row], manifest: Manifest, out: str | Path, label: str | None,
           warnings: tuple[str, ...], na_as_pass: bool,
           files: Callable[[], Sequence[InputFile]] | None = None) -> ScoredRun:
    """The run directory of `rows`; `files`, when given, are the inputs' records once the rows are read. Whatever
    stops the rows (bad input found at the end of the reading) removes the directory begun."""
    run_dir = new_run_dir(out, label or "score")
    try:
        return _written(run_dir, rows, manifest.model_copy(update={"run_id": run_dir.name}), warnings, na_as_pass,
                        files)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # only this run's own files: it was made above
        raise


def _written(run_dir: Path, rows: Iterable[Row], manifest: Manifest, warnings: tuple[str, ...], na_as_pass: bool,
             files: Callable[[], Sequence[InputFile]] | None) -> ScoredRun:
    write_json(run_dir / MANIFEST, manifest.to_json())  # status incomplete until the last row is in
    summarizer = Summarizer(manifest.metrics, na_as_pass=na_as_pass, stability=False)
    failed, lexical = _Sampler(FAILED_SHOWN), _Sampler(LEXICAL_SHOWN)
    by_lexical = _Lexical.warning_of(manifest)
    with atomic_writer(run_dir / ROWS) as fh:
        for row in rows:
            fh.write(row.line() + "\n")  # built once, validated once (as it was built), never parsed back
            summarizer.add(row)
            if row.metrics.get("passed") != 1.0:
                failed.add(row)
            if by_lexical in row.warnings:
                lexical.add(row.case_id)
    summary = summarizer.summary(manifest.collection.to_json())
    update: dict[str, Any] = {"status": "complete", "ended_at": utc_now()}
    if files is not None:
        update["inputs"] = _inputs(files())
    manifest = manifest.model_copy(update=update)
    scored = ScoredRun(run_dir, summary, manifest, warnings, failed.sample(), lexical.sample())
    write_json(run_dir / SUMMARY, summary.to_json())
    atomic_write_text(run_dir / FAILED_TABLE, failed_table(scored) + "\n")
    atomic_write_text(run_dir / CHART, svg_bars(chart_bars(summary), title=chart_title(summary)))
    write_json(run_dir / MANIFEST, manifest.to_json())
    return scored


class _Sampler:
    def __init__(self, keep: int):
        self.keep, self.total = keep, 0
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        self.total += 1
        if len(self.items) < self.keep:
            self.items.append(item)

    def sample(self) -> Sample:
        return Sample(tuple(self.items), self.total)


def _manifest(files: Sequence[InputFile], chunks: int, k: int, na_as_pass: bool) -> Manifest:
    return Manifest(format=MANIFEST_FORMAT, run_id="", status="incomplete", started_at=utc_now(),
                    ended_at=utc_now(), package_version=__version__,
                    versions=VersionsRecord.model_validate(software_versions()),
                    settings={"k": list(KS), "lexical_k": k, "na_as_pass": na_as_pass},
                    system={"name": "saved outputs", "system": "saved outputs scored offline (rag-eval score)"},
                    inputs=_inputs(files), metrics=metric_names(KS),
                    collection={"chunks": chunks or None})


def _inputs(files: Sequence[InputFile]) -> dict[str, Any]:
    return {"saved": [f.to_json() for f in files]}


def _warnings(has_claims: bool) -> tuple[str, ...]:
    return () if has_claims else ("no claims file was found or given, so claim support is not scored (n/a for "
                                  "every case); pass --claims FILE or put claims.<ext> beside the cases file",)


def chart_bars(summary: Summary) -> list[tuple[str, float | None]]:
    """One (label, mean) bar per tutorial check."""
    return [(label, summary.mean(name)) for name, label in CHECK_LABELS.items()]


def chart_title(summary: Summary) -> str:
    na = "n/a counted as 1.0" if summary.na_as_pass else "n/a left out"
    return f"{summary.rows} cases, {summary.passes} pass every check ({na})"


_SHORT = {"retrieval_recall": "recall", "citation_precision": "citation", "claim_support": "claims",
          "key_point_coverage": "points", "abstention": "abstain"}


def failed_table(scored: ScoredRun) -> str:
    """The failed cases (the first `FAILED_SHOWN`) with every check's value and the reasons beneath each, under a
    line saying how many failed and, when not all are shown, how to get every row."""
    failed, total = scored.failed, scored.summary.rows
    if not failed.total:
        return f"failed cases: 0 of {total}"
    title = f"failed cases: {failed.total} of {total}"
    if failed.total > len(failed.items):
        title += (f" (the first {len(failed.items)} shown; every row: rag-eval export {scored.run_dir} "
                  "--csv rows.csv)")
    id_width = max(len("case"), *(len(r.case_id) for r in failed.items))
    widths = [max(5, len(short)) for short in _SHORT.values()]
    header = "  ".join([f"{'case':<{id_width}}", *(f"{s:>{w}}" for s, w in zip(_SHORT.values(), widths))])
    lines = [title, header]
    for row in failed.items:
        values = (fmt(row.metrics.get(name)) for name in _SHORT)
        lines.append("  ".join([f"{row.case_id:<{id_width}}", *(f"{v:>{w}}" for v, w in zip(values, widths))]))
        lines += [f"{'':<{id_width}}  - {reason}" for reason in row.failure_reasons]
    return "\n".join(lines)


class _Lexical:
    """BM25 over the saved chunks, built on first use. A question asked again (logs repeat questions) gets the ids
    it got before: a search is deterministic, and the last `CACHED` distinct questions are kept."""

    CACHED = 4096

    def __init__(self, chunks: Sequence[SavedChunk], k: int):
        self.chunks, self.k = chunks, k
        self.warning = _Lexical.warning_for(k)
        self._index: LexicalIndex | None = None
        self._seen: dict[str, tuple[str, ...]] = {}

    @staticmethod
    def warning_for(k: int) -> str:
        return f"retrieved ids from the lexical retriever (top {k})"

    @staticmethod
    def warning_of(manifest: Manifest) -> str:
        return _Lexical.warning_for(manifest.settings.lexical_k or 0)

    def top(self, question: str) -> tuple[str, ...]:
        ids = self._seen.get(question)
        if ids is None:
            ids = self._search(question)
            if len(self._seen) >= self.CACHED:
                del self._seen[next(iter(self._seen))]  # the oldest question
            self._seen[question] = ids
        return ids

    def _search(self, question: str) -> tuple[str, ...]:
        if self._index is None:
            self._index = LexicalIndex([c.text for c in self.chunks])
        return tuple(self.chunks[i].chunk_id for i, _ in self._index.search(question, self.k))


def _case(case: SavedCase) -> Case:
    meta = case.metadata or {}
    evidence = tuple(Evidence(e["source_id"], e.get("quote")) for e in meta["evidence"]) if "evidence" in meta \
        else tuple(Evidence(cid) for cid in dict.fromkeys(case.expected_chunk_ids))
    return Case(id=case.case_id, question=case.question, evidence=evidence, facts=case.required_points,
                abstain=case.should_abstain, tags=tuple(meta.get("tags", ())))


class _Passages:
    """The `Passage` of a chunk id at a rank, made once (records are frozen; a log's cases retrieve the same chunks);
    at most `KEPT` are kept, the oldest let go first."""

    KEPT = 65536

    def __init__(self, texts: dict[str, str]):
        self.texts = texts
        self._made: dict[tuple[str, int], Passage] = {}

    def __call__(self, chunk_id: str, rank: int) -> Passage:
        passage = self._made.get((chunk_id, rank))
        if passage is None:
            if len(self._made) >= self.KEPT:
                del self._made[next(iter(self._made))]
            passage = self._made[chunk_id, rank] = Passage(source_id=chunk_id, text=self.texts.get(chunk_id, ""),
                                                           rank=rank, score=None)
        return passage


def _answer(case: SavedCase, retrieved: Sequence[str], passages: _Passages) -> SystemAnswer:
    quotes = {c["source_id"]: c["quote"] for c in (case.metadata or {}).get("citations", ())}
    return SystemAnswer(
        answer=case.candidate_answer, abstained=case.candidate_abstains, usage={}, raw="", malformed=None,
        error=None, details={}, retrieved=tuple(passages(cid, i) for i, cid in enumerate(retrieved, 1)),
        citations=tuple(Citation(source_id=cid, quote=quotes.get(cid, "")) for cid in case.cited_chunk_ids))


def _claim_records(claims: Sequence[SavedClaim]) -> list[ClaimRecord]:
    return [ClaimRecord(claim=c.claim, note="", verdict="supported" if c.supported else "unsupported",
                        source_id=c.support_chunk_ids[0] if c.support_chunk_ids else None) for c in claims]
