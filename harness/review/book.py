"""The reviews of a run's answers by one or more reviewers, and the resolutions of the claims they disagree on.

A review is one reviewer's verdicts on every claim of one answer, keyed by (case_id, answer_sha256, reviewer);
answer_sha256 is the hash of the normalised answer text, so a later run whose answer is unchanged is reviewed
already and a changed answer is pending again. Reviewing again as the same reviewer replaces only that reviewer's
review. Claims are matched across reviewers by `claim_key` (normalised, case-folded text); a claim only one
reviewer wrote is seen by one.

Each claim of an answer then has a status: `one_reviewer`, `agreed` (two or more reviewers, one verdict),
`disagreement` (their verdicts differ) or `resolved` (they differ and a resolution names the verdict).
`ClaimState.to_record` turns it into the `ClaimRecord` a row stores; its verdict is None while in disagreement.

A model judge (`rag-eval judge`) is one more reviewer, named `judge:<model>@<digest>` (`is_judge`). Its reviews
sit in the same file, with a quote per claim and the prompt's SHA-256, and may use the verdict `unverified`. They
never take part in the claim statuses above (humans stay the measure): `claim_states` is over human reviewers
only, and `judge_review` gives a judge's review of an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, cast

from pdfrag.text import clip

from ..judged import claim_key
from ..records import (
    CLAIM_STATUSES,
    JUDGE_VERDICTS,
    NOTE_CHARS,
    QUOTE_CHARS,
    SOURCE_ID_CHARS,
    VERDICTS,
    ClaimRecord,
    ClaimResolution,
    ClaimStatus,
    JudgeVerdict,
    ReviewerVerdict,
    Verdict,
)

__all__ = ["CLAIM_STATUSES", "JUDGE_PREFIX", "JUDGE_VERDICTS", "VERDICTS", "Claim", "ClaimState", "Resolution",
           "Review", "ReviewBook", "ReviewKey", "as_book", "claim_key", "is_judge"]

JUDGE_PREFIX = "judge:"
ReviewKey = tuple[str, str]  # (case_id, answer_sha256)


def is_judge(reviewer: str) -> bool:
    """A model judge's reviewer name (`judge:<model>@<digest>`), as opposed to a person's."""
    return reviewer.startswith(JUDGE_PREFIX)


@dataclass(frozen=True)
class Claim:
    """One claim of an answer and one reviewer's verdict; `source_id` names the supporting passage. A judge's
    claim also has the `quote` that decides it (and may be `unverified`); a person's has none."""

    claim: str
    verdict: JudgeVerdict
    source_id: str | None = None
    note: str = ""
    quote: str | None = None

    def bounded(self) -> Claim:
        """This claim as the reviews file keeps it: its quote, note and source id cut (with a marker) to
        QUOTE_CHARS, NOTE_CHARS and SOURCE_ID_CHARS. The claim itself is the run's answer's sentence, already
        bounded by --max-reply-chars, and the key reviewers are matched by: kept whole."""
        return replace(self, source_id=None if self.source_id is None else clip(self.source_id, SOURCE_ID_CHARS),
                       note=clip(self.note, NOTE_CHARS), quote=None if self.quote is None else clip(self.quote,
                                                                                                  QUOTE_CHARS))

    def to_dict(self) -> dict[str, Any]:
        claim = self.bounded()  # a file from before these bounds is written back bounded
        data = {"claim": claim.claim, "verdict": claim.verdict, "source_id": claim.source_id, "note": claim.note}
        return data if claim.quote is None else data | {"quote": claim.quote}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Claim:
        return cls(data["claim"], data["verdict"], data.get("source_id"), data.get("note", ""), data.get("quote"))


@dataclass(frozen=True)
class Review:
    """A reviewer's verdicts on every claim of one answer. `reviewed_at` is UTC ISO 8601."""

    case_id: str
    answer_sha256: str
    claims: tuple[Claim, ...]
    reviewer: str
    reviewed_at: str
    prompt_sha256: str | None = None  # a judge's: the SHA-256 of the prompt template it was asked with

    @property
    def key(self) -> ReviewKey:
        return (self.case_id, self.answer_sha256)

    @property
    def slot(self) -> tuple[str, str, str]:
        """What a later review replaces: the same answer by the same reviewer."""
        return (self.case_id, self.answer_sha256, self.reviewer)

    @property
    def claims_supported(self) -> float | None:
        """This reviewer's supported claims / all claims; None when the answer makes no claims."""
        if not self.claims:
            return None
        return sum(c.verdict == "supported" for c in self.claims) / len(self.claims)

    def to_dict(self) -> dict[str, Any]:
        data = {"case_id": self.case_id, "answer_sha256": self.answer_sha256,
                "claims": [c.to_dict() for c in self.claims], "reviewer": self.reviewer,
                "reviewed_at": self.reviewed_at}
        return data if self.prompt_sha256 is None else data | {"prompt_sha256": self.prompt_sha256}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Review:
        return cls(data["case_id"], data["answer_sha256"], tuple(Claim.from_dict(c) for c in data["claims"]),
                   data.get("reviewer", ""), data.get("reviewed_at", ""), data.get("prompt_sha256"))


@dataclass(frozen=True)
class Resolution:
    """The verdict that settles a claim of one answer on which reviewers disagree, and who settled it."""

    case_id: str
    answer_sha256: str
    claim: str
    verdict: Verdict
    source_id: str | None
    note: str
    resolver: str
    resolved_at: str

    @property
    def key(self) -> ReviewKey:
        return (self.case_id, self.answer_sha256)

    @property
    def slot(self) -> tuple[str, str, str]:
        """What a later resolution replaces: the same claim of the same answer."""
        return (self.case_id, self.answer_sha256, claim_key(self.claim))

    def to_record(self) -> ClaimResolution:
        return ClaimResolution(claim=self.claim, verdict=self.verdict, source_id=self.source_id, note=self.note,
                               resolver=self.resolver, resolved_at=self.resolved_at)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "resolution", "case_id": self.case_id, "answer_sha256": self.answer_sha256,
                **self.to_record().to_json()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Resolution:
        return cls(data["case_id"], data["answer_sha256"], data["claim"], data["verdict"], data.get("source_id"),
                   data.get("note", ""), data.get("resolver", ""), data.get("resolved_at", ""))


@dataclass(frozen=True)
class ClaimState:
    """One claim of an answer across its reviewers: each reviewer's verdict, and a resolution if any."""

    claim: str
    reviews: tuple[tuple[str, Claim], ...]  # (reviewer, that reviewer's claim), by reviewer name
    resolution: Resolution | None = None

    @property
    def status(self) -> ClaimStatus:
        """one_reviewer | agreed | disagreement | resolved (see the module docstring)."""
        if len(self.reviews) < 2:
            return "one_reviewer"
        if len({c.verdict for _, c in self.reviews}) == 1:
            return "agreed"
        return "resolved" if self.resolution is not None else "disagreement"

    @property
    def verdict(self) -> Verdict | None:
        """The verdict that counts; None while the reviewers disagree and nobody resolved it."""
        status = self.status
        if status == "resolved" and self.resolution is not None:
            return self.resolution.verdict
        return None if status == "disagreement" else cast(Verdict, self.reviews[0][1].verdict)

    @property
    def source_id(self) -> str | None:
        if self.status == "resolved" and self.resolution is not None:
            return self.resolution.source_id
        return next((c.source_id for _, c in self.reviews if c.source_id and self.verdict == c.verdict), None)

    @property
    def note(self) -> str:
        if len(self.reviews) == 1:
            return self.reviews[0][1].note
        notes = [f"{name or '(unnamed)'}: {c.note}" for name, c in self.reviews if c.note]
        if self.status == "resolved" and self.resolution is not None and self.resolution.note:
            notes.append(f"resolution by {self.resolution.resolver or '(unnamed)'}: {self.resolution.note}")
        return "; ".join(notes)

    def to_record(self) -> ClaimRecord:
        """The claim as a row stores it: the counted verdict, the status, every reviewer's verdict."""
        resolution = self.resolution.to_record() if self.status == "resolved" and self.resolution else None
        reviews = tuple(ReviewerVerdict(reviewer=name, claim=c.claim, verdict=cast(Verdict, c.verdict),
                                        source_id=c.source_id,
                                        note=c.note) for name, c in self.reviews)
        return ClaimRecord(claim=self.claim, verdict=self.verdict, source_id=self.source_id, note=self.note,
                           status=self.status, reviews=reviews, resolution=resolution)


@dataclass(frozen=True)
class ReviewBook:
    """Every reviewer's review of each answer, and the resolutions of claims they disagree on."""

    reviews: Mapping[tuple[str, str, str], Review] = field(default_factory=dict)
    resolutions: Mapping[tuple[str, str, str], Resolution] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[Review | Resolution]) -> ReviewBook:
        return cls().with_records(records)

    def with_records(self, records: Iterable[Review | Resolution]) -> ReviewBook:
        """A new book with `records` added; a record replaces the one in its slot (same answer and reviewer, or
        same answer and claim for a resolution)."""
        reviews, resolutions = dict(self.reviews), dict(self.resolutions)
        for record in records:
            if isinstance(record, Resolution):
                resolutions[record.slot] = record
            else:
                reviews[record.slot] = record
        return ReviewBook(reviews, resolutions)

    def merged(self, other: ReviewBook) -> ReviewBook:
        return self.with_records([*other.reviews.values(), *other.resolutions.values()])

    def records(self) -> list[Review | Resolution]:
        """Every record, sorted by answer key, reviews (by reviewer) before resolutions (by claim)."""
        items: list[tuple[tuple[str, str, int, str], Review | Resolution]] = [
            ((*k[:2], 0, k[2]), r) for k, r in self.reviews.items()]
        items += [((*k[:2], 1, k[2]), r) for k, r in self.resolutions.items()]
        return [r for _, r in sorted(items, key=lambda item: item[0])]

    @cached_property
    def _by_answer(self) -> dict[ReviewKey, list[Review]]:
        out: dict[ReviewKey, list[Review]] = {}
        for review in sorted(self.reviews.values(), key=lambda r: r.reviewer):
            if not is_judge(review.reviewer):
                out.setdefault(review.key, []).append(review)
        return out

    def for_answer(self, key: ReviewKey) -> list[Review]:
        """The answer's reviews by people (judges left out), by reviewer name."""
        return list(self._by_answer.get(key, []))

    def judge_review(self, key: ReviewKey, judge: str) -> Review | None:
        """The judge's review of the answer, if it judged it."""
        return self.reviews.get((*key, judge))

    def latest_judge(self) -> str | None:
        """The judge whose review was written last (by `reviewed_at`), or None when no judge rated anything."""
        latest = self.latest_judge_review()
        return None if latest is None else latest.reviewer

    def latest_judge_review(self) -> Review | None:
        """The judge's review written last (by `reviewed_at`): its reviewer and prompt digest; None without one."""
        judged = [r for r in self.reviews.values() if is_judge(r.reviewer)]
        return max(judged, key=lambda r: (r.reviewed_at, r.reviewer)) if judged else None

    def judges(self) -> list[str]:
        """Every judge reviewer name in the book, sorted."""
        return sorted({r.reviewer for r in self.reviews.values() if is_judge(r.reviewer)})

    def review_of(self, key: ReviewKey, reviewer: str) -> Review | None:
        return self.reviews.get((*key, reviewer))

    def claim_states(self, key: ReviewKey) -> list[ClaimState] | None:
        """The answer's claims across human reviewers, in the order the reviewers (by name) wrote them; None when
        nobody reviewed it. A reviewer who wrote the same claim twice counts once, with the later verdict."""
        reviews = self.for_answer(key)
        if not reviews:
            return None
        order: dict[str, str] = {}
        verdicts: dict[str, dict[str, Claim]] = {}
        for review in reviews:
            for claim in review.claims:
                order.setdefault(claim_key(claim.claim), claim.claim)
                verdicts.setdefault(claim_key(claim.claim), {})[review.reviewer] = claim
        return [ClaimState(text, tuple(sorted(verdicts[k].items())), self.resolutions.get((*key, k)))
                for k, text in order.items()]


def as_book(reviews: ReviewBook | Mapping[object, Review]) -> ReviewBook:
    """A book from a book, or from a mapping whose values are reviews (one reviewer's, keyed by answer)."""
    return reviews if isinstance(reviews, ReviewBook) else ReviewBook.of(reviews.values())
