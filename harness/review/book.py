"""The reviews of a run's answers by one or more reviewers, and the resolutions of the claims they disagree on.

A review is one reviewer's verdicts on every claim of one answer, keyed by (case_id, answer_sha256, reviewer);
answer_sha256 is the hash of the normalised answer text, so a later run whose answer is unchanged is reviewed
already and a changed answer is pending again. Reviewing again as the same reviewer replaces only that reviewer's
review. Claims are matched across reviewers by `claim_key` (normalised, case-folded text); a claim only one
reviewer wrote is seen by one.

Each claim of an answer then has a status: `one_reviewer`, `agreed` (two or more reviewers, one verdict),
`disagreement` (their verdicts differ) or `resolved` (they differ and a resolution names the verdict).
`ClaimState.to_record` turns it into the `ClaimRecord` a row stores; its verdict is None while in disagreement.
The records themselves (a review, a resolution, a claim) are `harness.records.reviews`.

A model judge (`rag-eval judge`) is one more reviewer, named `judge:<model>@<digest>` (`is_judge`). Its reviews
sit in the same file, with a quote per claim and the prompt's SHA-256, and may use the verdict `unverified`. They
never take part in the claim statuses above (humans stay the measure): `claim_states` is over human reviewers
only, and `judge_review` gives a judge's review of an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

from ..judged.claims import claim_key
from ..records import (
    CLAIM_STATUSES,
    JUDGE_VERDICTS,
    VERDICTS,
    ClaimRecord,
    ClaimStatus,
    ReviewerVerdict,
    Verdict,
)
from ..records.reviews import JUDGE_PREFIX, Claim, Resolution, Review, ReviewKey, is_judge

__all__ = ["CLAIM_STATUSES", "JUDGE_PREFIX", "JUDGE_VERDICTS", "VERDICTS", "Claim", "ClaimState", "Resolution",
           "Review", "ReviewBook", "ReviewKey", "as_book", "claim_key", "is_judge"]


def _slot(record: Review | Resolution) -> tuple[str, str, str]:
    """What a later record replaces: a review the same answer's by the same reviewer, a resolution the same claim's
    of the same answer."""
    return record.slot if isinstance(record, Review) else (record.case_id, record.answer_sha256,
                                                           claim_key(record.claim))


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
                resolutions[_slot(record)] = record
            else:
                reviews[_slot(record)] = record
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
