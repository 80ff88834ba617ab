"""The harness's typed records: what a system returns, what a run writes, and nothing else.

Every record is a frozen pydantic model that rejects unknown fields, so a reply or a file of the wrong shape
fails in one place with a message naming the field. The published JSON Schemas under `harness/schemas/` are
generated from these classes (`python -m harness.records`), and a test keeps them equal.
Units are in the names: `*_ms` milliseconds, `*_tokens` tokens, `*_chars` characters.
"""

from __future__ import annotations

import functools
import gc
import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["AnswerRecord", "Citation", "CitationResult", "ClaimCounts", "ClaimRecord", "ClaimResolution",
           "ClaimStatus", "EvidenceItem", "Expected", "FactResult", "JudgeVerdict", "JudgedClaim",
           "Manifest", "MetricSummary", "Passage",
           "QuoteValidation", "RetrievedPassage", "ReviewerVerdict", "Row", "STATUSES", "Summary", "SystemAnswer",
           "SystemReply", "Verdict", "field_problem", "in_bulk", "published_schemas"]

STATUSES = ("answered", "no_answer", "invalid_citation", "malformed_output", "error")
Status = Literal["answered", "no_answer", "invalid_citation", "malformed_output", "error"]
Score = float | None
QuoteStatus = Literal["passed", "failed", "not_applicable"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# ---------------------------------------------------------------- what a system returns


class Passage(_Record):
    """One retrieved passage, best first. `source_id` is `file.pdf#p3` or `file.pdf#p3.2` (path relative to
    --docs, pages from 1); `score` is the system's own, on its own scale, when it has one."""

    source_id: str = Field(min_length=1)
    text: str
    rank: int = Field(ge=1)
    score: float | None = Field(default=None, allow_inf_nan=False)


class Citation(_Record):
    """A quote the system gives as support, and the passage it names."""

    source_id: str
    quote: str


class SystemAnswer(_Record):
    """What any RAG system returns for one question. The harness judges it; a system never grades itself.

    `abstained` None means "abstained when `answer` is empty". `malformed` is a reason when the system's own
    reply could not be read (status malformed_output); `error` a reason when answering failed (status error).
    `details` holds system-specific facts for readers (e.g. thinking_chars, done_reason, reasons)."""

    answer: str = ""
    abstained: bool | None = None
    retrieved: tuple[Passage, ...] = ()
    citations: tuple[Citation, ...] = ()
    usage: dict[str, Any] = Field(default_factory=dict)
    raw: str = ""
    malformed: str | None = None
    error: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def abstains(self) -> bool:
        return self.abstained if self.abstained is not None else not self.answer.strip()


class _ReplyPassage(_Record):
    model_config = ConfigDict(frozen=True, extra="ignore")
    source_id: str = Field(min_length=1)
    text: str
    score: float | None = Field(default=None, allow_inf_nan=False)


class _ReplyCitation(_Record):
    model_config = ConfigDict(frozen=True, extra="ignore")
    source_id: str
    quote: str


class SystemReply(_Record):
    """The JSON body an HTTP system replies with (`harness/schemas/system_reply.schema.json`): `retrieved` best
    first; `abstained` optional (absent: abstained when `answer` is empty). Unknown keys are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    answer: str
    retrieved: list[_ReplyPassage]
    citations: list[_ReplyCitation] = Field(default_factory=list)
    abstained: bool | None = None

    def to_answer(self, raw: str) -> SystemAnswer:
        passages = tuple(Passage(source_id=p.source_id, text=p.text, rank=i, score=p.score)
                         for i, p in enumerate(self.retrieved, start=1))
        return SystemAnswer(answer=self.answer, abstained=self.abstained, retrieved=passages,
                            citations=tuple(Citation(source_id=c.source_id, quote=c.quote) for c in self.citations),
                            raw=raw)


def field_problem(exc: ValidationError) -> str:
    """The first problem of a validation error as `field.path: message`."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


# ---------------------------------------------------------------- one row per case


class EvidenceItem(_Record):
    source_id: str
    quote: str | None = None


class Expected(_Record):
    """The case's labels as scored: evidence pages, facts (each a list of accepted alternatives), abstain."""

    abstain: bool
    evidence: tuple[EvidenceItem, ...]
    facts: tuple[tuple[str, ...], ...]


class RetrievedPassage(_Record):
    """A passage as scored: `page_id` is the page its source id names (`doc#pN`), `page` None when the id
    names no page."""

    rank: int = Field(ge=1)
    source_id: str
    page_id: str
    doc_id: str
    page: int | None = Field(default=None, ge=1)
    score: float | None = Field(default=None, allow_inf_nan=False)
    text: str


class CitationResult(_Record):
    """A citation and the harness's verdict: `valid` None when it could not be checked (no quote saved);
    `reason` is None exactly when it is valid."""

    source_id: str
    quote: str
    valid: bool | None
    reason: str | None = None


class AnswerRecord(_Record):
    status: Status
    text: str = Field(description="what a user was shown")
    model_answer: str = Field(description="the system's answer, shown or not")
    answer_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    raw: str
    citations: tuple[CitationResult, ...]
    reasons: tuple[str, ...]
    thinking_chars: int = Field(default=0, ge=0)
    done_reason: str | None = None
    abstained: bool | None = Field(default=None, description="the system gave no answer (None in rows written "
                                                              "before this field: status != answered)")


Verdict = Literal["supported", "unsupported", "contradicted"]
# A judge's verdicts: the review's own, and "unverified" for a "supported" whose quote failed validation (never
# counted as supported).
JudgeVerdict = Literal["supported", "unsupported", "contradicted", "unverified"]
ClaimStatus = Literal["one_reviewer", "agreed", "disagreement", "resolved"]


class ReviewerVerdict(_Record):
    """One reviewer's verdict on a claim, as that reviewer wrote the claim."""

    reviewer: str
    claim: str
    verdict: Verdict
    source_id: str | None = None
    note: str = ""


class ClaimResolution(_Record):
    """The verdict that settles a claim on which reviewers disagree; `resolved_at` is UTC ISO 8601."""

    claim: str
    verdict: Verdict
    source_id: str | None = None
    note: str = ""
    resolver: str
    resolved_at: str


class ClaimRecord(BaseModel):
    """A reviewed claim (see `rag-eval review`). `verdict` is the one that counts: the only reviewer's, the
    reviewers' common one, or the resolution's; None while reviewers disagree (the row then stays pending).
    `status` says which; `reviews` holds each reviewer's verdict (empty for claims from a claims file, and in rows
    written before reviewers were kept). Unknown keys are kept, so a claims file's annotations survive scoring."""

    model_config = ConfigDict(frozen=True, extra="allow")
    claim: str
    verdict: Verdict | None = Field(description="the verdict that counts; null while reviewers disagree")
    source_id: str | None = None
    note: str = ""
    status: ClaimStatus = "one_reviewer"
    reviews: tuple[ReviewerVerdict, ...] = Field(default=(), description="every reviewer's verdict on this claim")
    resolution: ClaimResolution | None = None

    @property
    def settled(self) -> bool:
        """A verdict counts: not an open disagreement."""
        return self.verdict is not None


class JudgedClaim(_Record):
    """A claim as the judged metrics count it (`rag-eval judge`): the human verdict where one is settled
    (`by` human), else the judge's (`by` judge). `judge_verdict` is the judge's own verdict, with its
    `source_id` and `quote` (validated like a citation; `reason` says why a quote failed); None when the judge
    did not rate this claim."""

    claim: str
    verdict: JudgeVerdict | None
    by: Literal["human", "judge"]
    judge: str
    judge_verdict: JudgeVerdict | None = None
    source_id: str | None = None
    quote: str | None = None
    reason: str | None = None


class FactResult(_Record):
    fact: tuple[str, ...]
    found: bool


class QuoteValidation(_Record):
    status: QuoteStatus
    reasons: tuple[str, ...] = ()


class Row(_Record):
    """One case's result: the case, what the system did, every metric (None: not applicable) and why it failed.
    One JSON object per line of rows.jsonl."""

    format: Literal[1] = 1
    case_id: str = Field(min_length=1)
    repeat: int = Field(default=0, ge=0)
    question: str
    tags: tuple[str, ...] = ()
    expected: Expected
    retrieved: tuple[RetrievedPassage, ...]
    answer: AnswerRecord
    usage: dict[str, Any] = Field(description="token counts and durations; units in the names (_ms)")
    error: str | None = None
    human_claim_review: Literal["pending", "reviewed"] = "pending"
    claims: tuple[ClaimRecord, ...] | None = None
    judged_claims: tuple[JudgedClaim, ...] | None = Field(
        default=None, description="the claims as the judged metrics count them (human verdict, else the judge's); "
                                  "null when no judge rated this answer")
    metrics: dict[str, Score]
    fact_results: tuple[FactResult, ...]
    quote_validation: QuoteValidation
    failure_reasons: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    host: str | None = None

    @property
    def key(self) -> tuple[str, int]:
        """(case id, repeat): a row's identity within a run."""
        return (self.case_id, self.repeat)

    @property
    def errored(self) -> bool:
        return self.error is not None

    def line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, allow_nan=False)  # NaN is not JSON: never store it


# ---------------------------------------------------------------- run files


class ClaimCounts(_Record):
    """Reviewed claims of the rows without an error, by status. Claims of rows written before there were
    statuses count as seen by one reviewer."""

    agreed: int = 0
    in_disagreement: int = Field(default=0, description="pending until resolved")
    resolved: int = 0
    one_reviewer: int = 0


class MetricSummary(_Record):
    """Mean over the rows where the metric applies (None when none does), with the counts behind it."""

    mean: float | None
    scored: int
    not_applicable: int
    errored: int


class Summary(BaseModel):
    """summary.json. `na_as_pass`: not-applicable values were counted as 1.0 in the means."""

    model_config = ConfigDict(frozen=True, extra="allow")
    rows: int
    errored: int
    passes: int = 0
    metrics: dict[str, MetricSummary]
    answer_statuses: dict[str, int]
    human_claim_review: dict[str, int]
    claims: ClaimCounts = Field(default_factory=ClaimCounts)
    collection: dict[str, Any] = Field(default_factory=dict)
    na_as_pass: bool = False
    repeat_stability: dict[str, Any] | None = None
    by_origin: dict[str, dict[str, MetricSummary]] | None = Field(
        default=None, description="per origin (hand-written, drafted), when a run has both: the same metrics "
                                  "over each group, since the model that drafted a case may be the one answering")

    def mean(self, metric: str) -> float | None:
        found = self.metrics.get(metric)
        return found.mean if found else None

    def to_json(self) -> dict[str, Any]:
        # repeat_stability is absent unless a case was repeated; a metric's null mean stays, so the file reads back
        return self.model_dump(mode="json", exclude={"repeat_stability"} if self.repeat_stability is None else None)


class Manifest(BaseModel):
    """manifest.json: what produced the rows, so every number can be traced to settings and input hashes.
    Sections a system does not have are absent; extra sections (e.g. `rescored_from`) are kept."""

    model_config = ConfigDict(extra="allow")
    run_id: str
    status: Literal["complete", "incomplete"] = "incomplete"
    started_at: str | None = None
    ended_at: str | None = None
    package_version: str | None = None
    git_commit: str | None = None
    command: list[str] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    system: dict[str, Any] = Field(default_factory=dict)
    collection: dict[str, Any] = Field(default_factory=dict)
    inputs: dict[str, Any] = Field(default_factory=dict)
    metrics: list[str] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# ---------------------------------------------------------------- building many records

_P = ParamSpec("_P")
_R = TypeVar("_R")


def in_bulk(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """For a function that builds many records at once: Python's cyclic garbage collector pauses while it runs.
    Records hold no reference cycles, and with 100k of them alive every collection walks them all again: about
    a third of `rag-eval score`'s time (bench/bench_score.py). Reference counting still frees everything else at
    once; cyclic garbage made meanwhile (a caught exception and its traceback) waits for the next collection."""

    @functools.wraps(fn)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        was_on = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return paused


# ---------------------------------------------------------------- published schemas

_PUBLISHED: dict[str, tuple[type[BaseModel], str]] = {
    "row.schema.json": (Row, "pdf-rag-eval result row (one JSON object per line of rows.jsonl)"),
    "system_reply.schema.json": (SystemReply, "pdf-rag-eval HTTP system reply (POST {case_id, question})")}


def published_schemas() -> dict[str, dict]:
    """File name -> JSON Schema, generated from the records above."""
    out = {}
    for name, (model, title) in _PUBLISHED.items():
        schema = model.model_json_schema()
        out[name] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                     "$id": f"https://pdf-rag-eval.invalid/schemas/{name}", **schema, "title": title}
    return out


def _write_schemas() -> None:
    folder = Path(str(resources.files("harness").joinpath("schemas")))
    for name, schema in published_schemas().items():
        (folder / name).write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    _write_schemas()
