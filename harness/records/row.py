"""One row per case: the case's labels as scored, what the system did, the harness's verdicts and metrics."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from .base import JSON_INF_NAN, _Record

Status = Literal["answered", "no_answer", "invalid_citation", "malformed_output", "error"]
STATUSES: tuple[Status, ...] = get_args(Status)
Score = float | None
QuoteStatus = Literal["passed", "failed", "not_applicable"]


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
    abstained: bool | None = Field(default=None, description="the system decided to give no answer; false for a "
                                                              "malformed_output or error row, which made no "
                                                              "decision (None in rows written before this field: "
                                                              "status != answered)")


Verdict = Literal["supported", "unsupported", "contradicted"]
# A judge's verdicts: the review's own, and "unverified" for a "supported" whose quote failed validation (never
# counted as supported).
JudgeVerdict = Literal["supported", "unsupported", "contradicted", "unverified"]
ClaimStatus = Literal["one_reviewer", "agreed", "disagreement", "resolved"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
JUDGE_VERDICTS: tuple[JudgeVerdict, ...] = get_args(JudgeVerdict)
CLAIM_STATUSES: tuple[ClaimStatus, ...] = get_args(ClaimStatus)


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

    model_config = ConfigDict(frozen=True, extra="allow", ser_json_inf_nan=JSON_INF_NAN)
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


class CaseFields(_Record):
    """A row's first fields, naming its case: every view of a row (Row; the report's ReportRow) declares them here,
    in this order, so that they are read alike and rows.jsonl keeps its field order."""

    format: Literal[1] = 1
    case_id: str = Field(min_length=1)
    repeat: int = Field(default=0, ge=0)
    question: str
    tags: tuple[str, ...] = ()
    expected: Expected


# The words each reviewer warning of a row begins with (`harness.rows.reviewer_warnings`): what no check fails but
# a reviewer should see. summary.json counts the rows carrying each (`Summary.warnings`), and the report and the
# export show them.
REVIEW_WARNINGS = ("empty answer", "duplicate citation", "quotes not checked", "negated fact",
                   "instruction-like text")


def review_kinds(warnings: tuple[str, ...]) -> tuple[str, ...]:
    """The reviewer-warning kinds among a row's warnings, each once, in `REVIEW_WARNINGS` order."""
    heads = {w.partition(":")[0] for w in warnings}
    return tuple(k for k in REVIEW_WARNINGS if k in heads)


class Row(CaseFields):
    """One case's result: the case, what the system did, every metric (None: not applicable) and why it failed.
    One JSON object per line of rows.jsonl."""

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
        """The row as one line of rows.jsonl, by the record's own serializer (compact, UTF-8 as is). NaN and
        infinities are not JSON: a row holding one raises ValueError rather than being stored."""
        text = self.model_dump_json()
        if "NaN" in text or "Infinity" in text:  # rare: parse to tell a bare constant from the word in a text
            json.loads(text, parse_constant=_not_json)
        return text



# What a stored metric may be, by family (the name before "@"): 0 or 1, or a share from 0 to 1. Every family of
# harness/metrics/'s registry is in one of the two (a test keeps them in step); NaN is refused as it is parsed.
ZERO_ONE = frozenset({"hit", "behaviour", "quote_valid", "abstention", "passed"})
SHARES = frozenset({"recall", "rr", "facts", "grounded", "claims_supported", "retrieval_recall", "citation_precision",
                    "claim_support", "claims_supported_judged", "claim_support_judged", "key_point_coverage"})


def metric_problem(metrics: Mapping[str, Score]) -> str | None:
    """`metrics.<name>: …` for the first value out of its range (a 0/1 metric other than 0 or 1, a share outside
    [0, 1]), else None. Every command that reads rows checks each line with it, so a row edited by hand or written
    by another tool cannot make a mean of 1.56."""
    for name, value in metrics.items():
        if value is None or value == 0.0 or value == 1.0:  # nearly every value: checked first
            continue
        family = name.partition("@")[0]
        if family in ZERO_ONE:
            return f"metrics.{name}: {value!r}, but this metric is 0 or 1"
        if family in SHARES and not 0.0 < value < 1.0:
            return f"metrics.{name}: {value!r}, but this metric is a share from 0 to 1"
    return None


class RowScores(BaseModel):
    """What compare reads of a row of rows.jsonl: its identity, tags, error, review state and metrics; the other
    fields are parsed as JSON but not built into records (a tenth of the time of a whole `Row`). `judged_claims`
    is kept as plain data, only to tell whether a judge rated the answer: compare reads such a row whole.
    A metric that is NaN or infinite is refused here, as `Row.line` refuses to store one."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    format: Literal[1] = 1
    case_id: str = Field(min_length=1)
    repeat: int = Field(default=0, ge=0)
    tags: tuple[str, ...] = ()
    error: str | None = None
    human_claim_review: Literal["pending", "reviewed"] = "pending"
    judged_claims: tuple[Any, ...] | None = None
    metrics: dict[str, Annotated[float, Field(allow_inf_nan=False)] | None]


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON: a row holding it is never stored")
