"""The drafts file's records: one drafted test case a line (`rag-eval draft`), its verification, every reviewer's
decision and where it came from. Its published schema (`harness/schemas/draft.schema.json`) is generated from
`DraftLine`, the line as written; reading and writing the file: `harness.drafting.records`.

A draft is `answerable` (question, quote, facts from one page), `unanswerable` (a question no page answers), or
`error` (the page could not be drafted: the reason is kept, and a rerun tries again).

Reviewers: `reviews` holds one decision per reviewer (`by`); reviewing again replaces only that reviewer's. The
decision that counts (`Draft.decision`) is the one reviewer's; the shared one when all agree (`edited` counts as
`accepted`: an edit changes the draft and is its editor's acceptance of it); `pending` while they disagree, until
a `resolution` (status, reason, resolver `by`, time `at`) settles it. A line also stores that effective `decision`,
for people reading the file; it is recomputed on load.

Format versions (`format`, `DRAFTS_FORMAT`): a line without one was written before format versions (format 1);
one written before reviewers were kept apart has only `decision`, and a non-pending one becomes its reviewer's
review. A newer format than this code knows is refused. The records are frozen pydantic dataclasses (positional
like the plain dataclasses they were, each checked as it is made).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass

from .base import fields_of

__all__ = ["DECISION_STATUSES", "DRAFTS_FORMAT", "DRAFT_KINDS", "DRAFT_TYPES", "LINE", "Decision", "Draft",
           "DraftLine", "Provenance", "Reason", "Verification", "effective_decision"]

DRAFTS_FORMAT: Final = 2  # 1: lines without `format` (before versions); 2: `format` on every line
_Kind = Literal["answerable", "unanswerable", "error"]
_Type = Literal["number", "date", "name", "rule", "procedure", "other", "unanswerable"]
DRAFT_KINDS: tuple[str, ...] = get_args(_Kind)
DRAFT_TYPES: tuple[str, ...] = get_args(_Type)
DECISION_STATUSES = ("pending", "accepted", "rejected", "edited")

_CONFIG = ConfigDict(extra="forbid")
_SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def _status(value: str) -> str:
    if value not in DECISION_STATUSES:
        raise ValueError(f"{value!r} is not one of {', '.join(DECISION_STATUSES)}")
    return value


# A str to the type checker (callers pass a status they checked), one of DECISION_STATUSES to the record and schema.
_Status = Annotated[str, AfterValidator(_status), Field(json_schema_extra={"enum": list(DECISION_STATUSES)})]


@dataclass(frozen=True, config=_CONFIG)
class Reason:
    """A failed check: `code` is stable (counted in reports), `message` says what was found."""

    code: str
    message: str


@dataclass(frozen=True, config=_CONFIG)
class Verification:
    """Results of the deterministic checks. `passed` is true when no reason was found.

    `overlap` is the share of the question's content words that also occur in the quote; `longest_ngram` the
    longest run of words the two share. `dense_rank` / `bm25_rank` are the rank of the first chunk of the evidence
    page holding the quote when the question is the query (null: not computed, see `notes`)."""

    passed: bool
    reasons: tuple[Reason, ...] = ()
    tags: tuple[str, ...] = ()
    overlap: Annotated[float, Field(ge=0, le=1)] | None = None
    longest_ngram: Annotated[int, Field(ge=0)] | None = None
    language: dict[str, str] = dataclasses.field(default_factory=dict)  # {"page": code, "question": code}
    dense_rank: Annotated[int, Field(ge=1)] | None = None
    bm25_rank: Annotated[int, Field(ge=1)] | None = None
    best_bm25: float | None = None  # unanswerable drafts: the best sentence score over the collection
    parametric_answer: str | None = None  # what the model said without the page
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, config=_CONFIG)
class Decision:
    """A human decision. `edited` means accepted after changing question, quote or facts (checks re-run)."""

    status: _Status = "pending"
    reason: str | None = None  # why it was rejected
    by: str | None = None
    at: str | None = None  # UTC ISO 8601

    @property
    def verdict(self) -> str:
        """accepted | rejected | pending: what the reviewer said of the draft (an edit is an acceptance)."""
        return "accepted" if self.status == "edited" else self.status


def effective_decision(reviews: tuple[Decision, ...], resolution: Decision | None) -> Decision:
    """The decision that counts (see the module docstring)."""
    if not reviews:
        return Decision()
    if len(reviews) == 1:
        return reviews[0]
    if len({r.verdict for r in reviews}) > 1:
        return resolution if resolution is not None else Decision("pending", "reviewers disagree")
    status = "edited" if any(r.status == "edited" for r in reviews) else reviews[0].status
    reasons = list(dict.fromkeys(r.reason for r in reviews if r.reason))
    return Decision(status, " / ".join(reasons) or None, ", ".join(r.by or "(unnamed)" for r in reviews),
                    max((r.at or "" for r in reviews), default="") or None)


@dataclass(frozen=True, config=_CONFIG)
class Provenance:
    """Where a draft came from: model and digest, prompt template hash, page text hash, seed, cache use."""

    model: str
    model_digest: str
    prompt_sha256: _SHA256
    page_sha256: _SHA256
    seed: int
    drafted_at: str
    from_cache: bool


@dataclass(frozen=True, config=_CONFIG)
class Draft:
    """One drafted test case (see the module docstring)."""

    draft_id: Annotated[str, Field(min_length=1)]
    kind: _Kind
    source_id: Annotated[str, Field(pattern=r"#p[0-9]+$", description="the page the draft was written from")]
    question: str = ""
    quote: str = Field(default="", description="copied from the page; empty for unanswerable and error drafts")
    facts: tuple[str, ...] = ()
    type: _Type = "other"
    evidence: tuple[str, ...] = Field(default=(), description="page ids holding the quote, the source page first")
    verification: Verification = Verification(False)
    reviews: tuple[Decision, ...] = Field(default=(), description="one decision per reviewer (by), sorted by "
                                                                  "reviewer; absent in files of format 1 written "
                                                                  "before reviews were kept apart")
    provenance: Provenance | None = None
    original: dict[str, Any] | None = Field(default=None, description="the model's question, quote and facts "
                                                                      "before a human edit")
    error: str | None = None
    resolution: Decision | None = Field(default=None, description="settles a disagreement between reviewers "
                                                                  "(status accepted or rejected, by = the resolver)")
    judge_reviews: tuple[Decision, ...] = Field(default=(), description="a model judge's decisions (rag-eval draft "
                                                                        "judge), by judge:<model>@<digest>; never "
                                                                        "counted as a reviewer's decision")

    @property
    def decision(self) -> Decision:
        """The decision that counts (see the module docstring)."""
        return effective_decision(self.reviews, self.resolution)

    @property
    def in_disagreement(self) -> bool:
        """Reviewers gave different decisions (resolved or not)."""
        return len({r.verdict for r in self.reviews}) > 1

    @property
    def doc_id(self) -> str:
        return self.source_id.rsplit("#p", 1)[0]

    def with_decision(self, decision: Decision) -> Draft:
        """The draft with `decision` as its reviewer's (`decision.by`), replacing only that reviewer's earlier
        one; a pending decision withdraws it."""
        others = tuple(r for r in self.reviews if r.by != decision.by)
        mine = () if decision.status == "pending" else (decision,)
        return dataclasses.replace(self, reviews=tuple(sorted(others + mine, key=lambda r: r.by or "")))

    def with_judge(self, decision: Decision) -> Draft:
        """The draft with a judge's decision (`decision.by`), replacing only that judge's earlier one."""
        others = tuple(r for r in self.judge_reviews if r.by != decision.by)
        return dataclasses.replace(self, judge_reviews=tuple(sorted((*others, decision), key=lambda r: r.by or "")))

    def with_resolution(self, resolution: Decision | None) -> Draft:
        return dataclasses.replace(self, resolution=resolution)

    def with_reviews_of(self, other: Draft) -> Draft:
        """The draft carrying `other`'s reviews, resolution and judge decisions (a rerun keeps what was decided)."""
        return dataclasses.replace(self, reviews=other.reviews, resolution=other.resolution,
                                   judge_reviews=other.judge_reviews)


@dataclass(frozen=True, config=_CONFIG)
class DraftLine(Draft):
    """A line of the drafts file: the draft, with its format and, for people reading the file, the decision that
    counts (`decision`; in format 1 files written before reviews were kept apart, the one reviewer's)."""

    stored_decision: Decision | None = Field(default=None, alias="decision", description=(
        "the decision that counts, derived from reviews and resolution (recomputed on load); in files written "
        "before reviews were kept apart, the one reviewer's decision"))
    format: Annotated[int, Field(ge=1)] = Field(default=1, description="the drafts file's format version "
                                                                       "(DRAFTS_FORMAT); absent: 1")

    @classmethod
    def of(cls, draft: Draft) -> DraftLine:
        return cls(**fields_of(draft, Draft), decision=draft.decision, format=DRAFTS_FORMAT)

    def draft(self, *, with_reviews: bool) -> Draft:
        """The draft of this line; without `with_reviews` (a line that has none) its stored decision is its one
        reviewer's review, unless pending."""
        found = fields_of(self, Draft)
        if not with_reviews:
            old = self.stored_decision or Decision()
            found["reviews"] = () if old.status == "pending" else (old,)
        return Draft(**found)

    def to_json(self) -> dict[str, Any]:
        data = LINE.dump_python(self, mode="json", by_alias=True)
        if not self.judge_reviews:
            del data["judge_reviews"]
        return data


LINE: TypeAdapter[DraftLine] = TypeAdapter(DraftLine)
