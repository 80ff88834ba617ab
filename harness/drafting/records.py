"""The drafts file: one JSON object per line (schema: harness/schemas/draft.schema.json).

A draft is `answerable` (question, quote, facts from one page), `unanswerable` (a question no page answers), or
`error` (the page could not be drafted: the reason is kept, and a rerun tries again). Every draft carries its
verification (named reasons, tags, measurements), every reviewer's decision, and where it came from.

Reviewers: `reviews` holds one decision per reviewer (`by`); reviewing again replaces only that reviewer's. The
decision that counts (`Draft.decision`) is the one reviewer's; the shared one when all agree (`edited` counts as
`accepted`: an edit changes the draft and is its editor's acceptance of it); `pending` while they disagree, until
a `resolution` (status, reason, resolver `by`, time `at`) settles it. The file also stores that effective
`decision`, for people reading it; it is recomputed on load. A file written before reviewers were kept apart has
only `decision`: a non-pending one becomes its reviewer's review.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path

from pdfrag.store import atomic_write_text

from ..inputs import Problems, schema_lines

KINDS = ("answerable", "unanswerable", "error")
STATUSES = ("pending", "accepted", "rejected", "edited")
_ID_UNSAFE = re.compile(r"[#\s]+")  # case ids may not hold spaces
TYPES = ("number", "date", "name", "rule", "procedure", "other", "unanswerable")


@dataclass(frozen=True)
class Reason:
    """A failed check: `code` is stable (counted in reports), `message` says what was found."""

    code: str
    message: str


@dataclass(frozen=True)
class Verification:
    """Results of the deterministic checks. `passed` is true when no reason was found.

    `overlap` is the share of the question's content words that also occur in the quote; `longest_ngram` the
    longest run of words the two share. `dense_rank` / `bm25_rank` are the rank of the first chunk of the evidence
    page holding the quote when the question is the query (null: not computed, see `notes`)."""

    passed: bool
    reasons: tuple[Reason, ...] = ()
    tags: tuple[str, ...] = ()
    overlap: float | None = None
    longest_ngram: int | None = None
    language: dict = field(default_factory=dict)  # {"page": code, "question": code}
    dense_rank: int | None = None
    bm25_rank: int | None = None
    best_bm25: float | None = None  # unanswerable drafts: the best sentence score over the collection
    parametric_answer: str | None = None  # what the model said without the page
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self) | {"reasons": [asdict(r) for r in self.reasons], "tags": list(self.tags),
                               "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: dict) -> Verification:
        return cls(**(data | {"reasons": tuple(Reason(**r) for r in data.get("reasons", ())),
                              "tags": tuple(data.get("tags", ())), "notes": tuple(data.get("notes", ()))}))


@dataclass(frozen=True)
class Decision:
    """A human decision. `edited` means accepted after changing question, quote or facts (checks re-run)."""

    status: str = "pending"
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


@dataclass(frozen=True)
class Provenance:
    """Where a draft came from: model and digest, prompt template hash, page text hash, seed, cache use."""

    model: str
    model_digest: str
    prompt_sha256: str
    page_sha256: str
    seed: int
    drafted_at: str
    from_cache: bool


@dataclass(frozen=True)
class Draft:
    draft_id: str
    kind: str
    source_id: str
    question: str = ""
    quote: str = ""
    facts: tuple[str, ...] = ()
    type: str = "other"
    evidence: tuple[str, ...] = ()  # page ids holding the quote: the source page first
    verification: Verification = Verification(False)
    reviews: tuple[Decision, ...] = ()  # one per reviewer, sorted by name
    provenance: Provenance | None = None
    original: dict | None = None  # the model's question/quote/facts before a human edit
    error: str | None = None
    resolution: Decision | None = None  # settles a disagreement; ignored while the reviewers agree
    judge_reviews: tuple[Decision, ...] = ()  # a model judge's (`rag-eval draft judge`): never a reviewer's

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

    def to_dict(self) -> dict:
        return {"draft_id": self.draft_id, "kind": self.kind, "source_id": self.source_id,
                "question": self.question, "quote": self.quote, "facts": list(self.facts), "type": self.type,
                "evidence": list(self.evidence), "verification": self.verification.to_dict(),
                "decision": asdict(self.decision), "reviews": [asdict(r) for r in self.reviews],
                "resolution": asdict(self.resolution) if self.resolution else None,
                "provenance": asdict(self.provenance) if self.provenance else None,
                "original": self.original, "error": self.error,
                **({"judge_reviews": [asdict(r) for r in self.judge_reviews]} if self.judge_reviews else {})}

    @classmethod
    def from_dict(cls, data: dict) -> Draft:
        return cls(data["draft_id"], data["kind"], data["source_id"], data.get("question", ""),
                   data.get("quote", ""), tuple(data.get("facts", ())), data.get("type", "other"),
                   tuple(data.get("evidence", ())), Verification.from_dict(data["verification"]),
                   _reviews(data), Provenance(**data["provenance"]) if data.get("provenance") else None,
                   data.get("original"), data.get("error"),
                   Decision(**data["resolution"]) if data.get("resolution") else None,
                   tuple(Decision(**r) for r in data.get("judge_reviews", ())))

    def with_decision(self, decision: Decision) -> Draft:
        """The draft with `decision` as its reviewer's (`decision.by`), replacing only that reviewer's earlier
        one; a pending decision withdraws it."""
        others = tuple(r for r in self.reviews if r.by != decision.by)
        mine = () if decision.status == "pending" else (decision,)
        return replace(self, reviews=tuple(sorted(others + mine, key=lambda r: r.by or "")))

    def with_judge(self, decision: Decision) -> Draft:
        """The draft with a judge's decision (`decision.by`), replacing only that judge's earlier one."""
        others = tuple(r for r in self.judge_reviews if r.by != decision.by)
        return replace(self, judge_reviews=tuple(sorted((*others, decision), key=lambda r: r.by or "")))

    def with_resolution(self, resolution: Decision | None) -> Draft:
        return replace(self, resolution=resolution)

    def with_reviews_of(self, other: Draft) -> Draft:
        """The draft carrying `other`'s reviews, resolution and judge decisions (a rerun keeps what was decided)."""
        return replace(self, reviews=other.reviews, resolution=other.resolution, judge_reviews=other.judge_reviews)


def _reviews(data: dict) -> tuple[Decision, ...]:
    """Each reviewer's decision; a file from before reviewers were kept apart has one `decision`."""
    if "reviews" in data:
        return tuple(Decision(**r) for r in data["reviews"])
    old = Decision(**data.get("decision", {}))
    return () if old.status == "pending" else (old,)


def draft_id(kind: str, source_id: str, question: str, quote: str) -> str:
    """A stable id from what the draft says, so a rerun finds the same draft (and its decision) again."""
    digest = hashlib.sha256(f"{kind}\0{source_id}\0{question}\0{quote}".encode()).hexdigest()
    return f"{_ID_UNSAFE.sub('-', source_id)}-{digest[:8]}"


def draft_schema() -> dict:
    text = resources.files("harness").joinpath("schemas/draft.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def read_drafts(path: str | Path) -> list[Draft]:
    """Parse a drafts file, reporting every bad line at once with its line number."""
    path = Path(path)
    problems = Problems(str(path))
    drafts = [Draft.from_dict(data) for _, data in
              schema_lines(path, draft_schema(), problems, what="drafts file", record="draft",
                           id_field="draft_id")]
    problems.raise_if_any("the drafts file")
    return drafts


def write_drafts(path: str | Path, drafts: list[Draft]) -> None:
    """Write every draft, one a line, atomically (a kill leaves the old file or the new one)."""
    atomic_write_text(path, "".join(json.dumps(d.to_dict(), ensure_ascii=False) + "\n" for d in drafts))
