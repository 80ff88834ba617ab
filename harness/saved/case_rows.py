"""The row of one saved case (`RowMaker`, `score_rows`), and rows made in batches, in worker processes when there
are several cores (`scored_batches`).

A batch comes back as what the run directory takes of its rows (`Batch`): their lines, their tallies for the
summary (`harness.summary.Tally`, summed in row order, so the summary is the same whatever the number of workers),
the first failed cases and the first cases scored with the lexical retriever, each with its count. Batches come back
in the order of the cases; at most `IN_FLIGHT` per worker are out, so memory does not grow with the cases. Workers
are forked from a fork server (`multiprocessing`'s "forkserver"): a clean process, whatever threads the caller runs;
`harness.saved.workers` runs them, and ends them whatever stops the scoring.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from pdfrag.lexical import LexicalIndex

from ..cases import Case, Evidence
from ..records import Citation, ClaimRecord, Manifest, Passage, Row, SystemAnswer
from ..rows import ScoringRules, build_row
from ..summary import Tally, tally
from .outputs import SavedCase, SavedChunk, SavedClaim
from .workers import in_order

__all__ = ["BATCH", "KS", "Batch", "FailedCase", "Lexical", "RowMaker", "Setup", "default_workers", "score_rows",
           "scored_batches"]

KS = (1, 2, 4)
BATCH = 1024  # cases scored together, in one worker process
IN_FLIGHT = 4  # batches per worker sent and not yet taken back: the reading goes on while the workers start


def score_rows(cases: Iterable[tuple[SavedCase, Sequence[SavedClaim]]], chunks: Sequence[SavedChunk], *,
               has_claims: bool, k: int = 2) -> Iterator[Row]:
    """The row of each (case, its claims) in turn; cases without saved retrieved ids get the top `k` chunks of
    the lexical retriever. Without a claims file (`has_claims` False) no row is reviewed."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    maker = RowMaker(chunks, has_claims, k)
    return (maker(case, claims) for case, claims in cases)


class RowMaker:
    """The row of a saved case and its claims: the lexical retriever for cases without retrieved ids and the shared
    passages live as long as the maker (one per run, or per worker process)."""

    def __init__(self, chunks: Sequence[SavedChunk], has_claims: bool, k: int):
        self.has_claims = has_claims
        self.passages = _Passages({c.chunk_id: c.text for c in chunks})
        self.lexical = Lexical(chunks, k)

    def __call__(self, case: SavedCase, claims: Sequence[SavedClaim]) -> Row:
        retrieved, by = (case.retrieved_chunk_ids, "") if case.retrieved_chunk_ids is not None else \
            (self.lexical.top(case.question), self.lexical.warning)
        meta = case.metadata or {}
        rules = _rules(bool(meta.get("citations")), meta.get("min_quote_words", 1))
        reviewed = _claim_records(claims) if self.has_claims else None
        return build_row(_case(case), _answer(case, retrieved, self.passages), rules, elapsed_ms=0.0,
                         warnings=(by,) if by else (), claims=reviewed)


def _rules(check_quotes: bool, min_quote_words: Any) -> ScoringRules:
    """The scoring rules of a case, one per setting: a case's metadata sets it (its value free-form, so only a whole
    number is shared)."""
    if isinstance(min_quote_words, int):
        return _shared_rules(check_quotes, min_quote_words)
    return ScoringRules(KS, check_quotes=check_quotes, min_quote_words=min_quote_words)


@lru_cache(maxsize=64)
def _shared_rules(check_quotes: bool, min_quote_words: int) -> ScoringRules:
    return ScoringRules(KS, check_quotes=check_quotes, min_quote_words=min_quote_words)


class Lexical:
    """BM25 over the saved chunks, built on first use. A question asked again (logs repeat questions) gets the ids
    it got before: a search is deterministic, and the last `CACHED` distinct questions are kept."""

    CACHED = 4096

    def __init__(self, chunks: Sequence[SavedChunk], k: int):
        self.chunks, self.k = chunks, k
        self.warning = Lexical.warning_for(k)
        self._index: LexicalIndex | None = None
        self._seen: dict[str, tuple[str, ...]] = {}

    @staticmethod
    def warning_for(k: int) -> str:
        return f"retrieved ids from the lexical retriever (top {k})"

    @staticmethod
    def warning_of(manifest: Manifest) -> str:
        return Lexical.warning_for(manifest.settings.lexical_k or 0)

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
    quotes = citation_quotes(case.cited_chunk_ids, (case.metadata or {}).get("citations"))
    return SystemAnswer(
        answer=case.candidate_answer, abstained=case.candidate_abstains, usage={}, raw="", malformed=None,
        error=None, details={}, retrieved=tuple(passages(cid, i) for i, cid in enumerate(retrieved, 1)),
        citations=tuple(Citation(source_id=cid, quote=q) for cid, q in zip(case.cited_chunk_ids, quotes)))


def citation_quotes(cited: Sequence[str], saved: Any) -> tuple[str, ...]:
    """The quote of each cited id, in order, from a case's `metadata.citations`: an ordered list of
    `{"source_id", "quote"}` gives the n-th citation of an id the n-th entry of that id (a replay writes the list in
    the citations' order, so each citation keeps its own quote, two of one page included); an object keyed by source
    id (`{"a.pdf#p2": "quote"}`, how quotes were once looked up) gives each citation of an id that id's one quote. A
    citation with no entry left has the empty quote (it fails validation, as a citation without a quote does)."""
    if saved is None:  # no quotes saved (the CSV layout)
        return ("",) * len(cited)
    if isinstance(saved, dict):
        return tuple(q if isinstance(q := saved.get(cid), str) else "" for cid in cited)
    queues: dict[str, list[str]] = {}
    for entry in saved if isinstance(saved, (list, tuple)) else ():
        if isinstance(entry, dict) and isinstance(entry.get("source_id"), str):
            quote = entry.get("quote")
            queues.setdefault(entry["source_id"], []).append(quote if isinstance(quote, str) else "")
    taken: dict[str, int] = {}
    out = []
    for cid in cited:
        n = taken[cid] = taken.get(cid, -1) + 1
        queue = queues.get(cid, ())
        out.append(queue[n] if n < len(queue) else "")
    return tuple(out)


def _claim_records(claims: Sequence[SavedClaim]) -> list[ClaimRecord]:
    return [ClaimRecord(claim=c.claim, note="", verdict="supported" if c.supported else "unsupported",
                        source_id=c.support_chunk_ids[0] if c.support_chunk_ids else None) for c in claims]


class FailedCase(NamedTuple):
    """What the failed-case table shows of a row: its id, the tutorial's checks and its failure reasons."""

    case_id: str
    metrics: dict[str, float | None]
    failure_reasons: tuple[str, ...]


@dataclass(frozen=True)
class Setup:
    """What scoring a batch needs beside its cases, sent once to each worker: the chunks, whether a claims file was
    read, the lexical retriever's k, the summary's metric names, the checks the failed-case table shows and how many
    failed cases and lexical ids a batch keeps."""

    chunks: tuple[SavedChunk, ...]
    has_claims: bool
    k: int
    names: tuple[str, ...]
    checks: tuple[str, ...]
    failed_kept: int
    lexical_kept: int


@dataclass(frozen=True)
class Batch:
    """Rows as the run directory takes them (see the module docstring)."""

    text: str  # their lines, each ending in a newline
    tallies: tuple[Tally, ...]
    failed: tuple[FailedCase, ...]
    failed_count: int
    lexical: tuple[str, ...]
    lexical_count: int
    pid: int  # the process that scored them

    @classmethod
    def of(cls, rows: Iterable[Row], setup: Setup, by_lexical: str) -> Batch:
        lines: list[str] = []
        tallies: list[Tally] = []
        failed: list[FailedCase] = []
        lexical: list[str] = []
        failed_count = lexical_count = 0
        for row in rows:
            if row.judged_claims is not None:  # a judge's rows go through Summarizer.add; scoring never makes one
                raise ValueError(f"case {row.case_id!r}: a scored row carries judged claims")
            lines.append(row.line())  # built once, validated once (as it was built), never parsed back
            tallies.append(tally(row, setup.names))
            if row.metrics.get("passed") != 1.0:
                failed_count += 1
                if len(failed) < setup.failed_kept:
                    failed.append(FailedCase(row.case_id, {n: row.metrics.get(n) for n in setup.checks},
                                             row.failure_reasons))
            if by_lexical in row.warnings:
                lexical_count += 1
                if len(lexical) < setup.lexical_kept:
                    lexical.append(row.case_id)
        text = "".join(line + "\n" for line in lines)
        return cls(text, tuple(tallies), tuple(failed), failed_count, tuple(lexical), lexical_count, os.getpid())


def default_workers() -> int:
    """The processors this process may use (at most 8)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 1
    return max(1, min(8, usable))


def scored_batches(cases: Iterable[tuple[SavedCase, Sequence[SavedClaim]]], setup: Setup, *,
                   workers: int) -> Iterator[Batch]:
    """The batches of `cases` (`BATCH` at a time), scored in order. With `workers` > 1 and more than one batch,
    in that many worker processes; else here."""
    batches = _chunked(cases)
    first = list(itertools.islice(batches, 2))
    if workers < 2 or len(first) < 2:
        maker = _Worker(setup)
        yield from (maker(b) for b in itertools.chain(first, batches))
        return
    yield from in_order(itertools.chain(first, batches), _Worker, setup, workers=workers, in_flight=IN_FLIGHT,
                        preload=(__name__,), what=_cases_of)


def _cases_of(n: int) -> str:
    return f"batch {n + 1} (cases {n * BATCH + 1:,} to {(n + 1) * BATCH:,})"


def _chunked(cases: Iterable[tuple[SavedCase, Sequence[SavedClaim]]]) -> Iterator[list]:
    it = iter(cases)
    while batch := list(itertools.islice(it, BATCH)):
        yield batch


class _Worker:
    """Scores batches: one per process (a worker's, or the caller's with one worker), kept across its batches."""

    def __init__(self, setup: Setup):
        self.setup, self.maker = setup, RowMaker(setup.chunks, setup.has_claims, setup.k)
        self.by_lexical = Lexical.warning_for(setup.k)

    def __call__(self, cases: list[tuple[SavedCase, Sequence[SavedClaim]]]) -> Batch:
        return Batch.of((self.maker(case, claims) for case, claims in cases), self.setup, self.by_lexical)
