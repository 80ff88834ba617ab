"""How far reviewers agree on the claims of a run's answers, and where they disagree (statistics in
`harness/agreement.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, Agreement, measure_agreement
from .records import ClaimRecord, Row
from .review import distinct_answers

__all__ = ["AgreementReport", "Disagreement", "agreement_report"]


@dataclass(frozen=True)
class Disagreement:
    """A claim whose reviewers gave different verdicts, as the row stores it (open, or resolved)."""

    case_id: str
    answer_sha256: str
    question: str
    claim: ClaimRecord

    @property
    def open(self) -> bool:
        return self.claim.status == "disagreement"

    def to_json(self) -> dict[str, Any]:
        resolution = self.claim.resolution
        return {"case_id": self.case_id, "answer_sha256": self.answer_sha256, "question": self.question,
                "claim": self.claim.claim, "status": self.claim.status,
                "verdicts": [v.to_json() for v in self.claim.reviews],
                "resolution": None if resolution is None else resolution.to_json()}


@dataclass(frozen=True)
class AgreementReport:
    """The agreement figures over claims two or more reviewers rated, and every disagreement among them."""

    agreement: Agreement
    disagreements: tuple[Disagreement, ...]

    @property
    def open_disagreements(self) -> int:
        return sum(d.open for d in self.disagreements)

    def to_json(self) -> dict[str, Any]:
        """`claims`, `reviewers`, `percent_agreement` and its interval, `kappa` (two reviewers) or `alpha`
        (more) with `interval`, `undefined_reason` and `disagreements`."""
        a = self.agreement
        return {"claims": a.items, "reviewers": list(a.reviewers), "percent_agreement": a.percent_agreement,
                "percent_agreement_interval": a.percent_interval.to_dict(), a.coefficient: a.value,
                "interval": a.interval.to_dict(), "undefined_reason": a.reason,
                "disagreements": [d.to_json() for d in self.disagreements]}


def _rated_claims(rows: Sequence[Row]) -> list[tuple[Row, ClaimRecord]]:
    """(row, claim) for each claim rated by two or more reviewers, each answer once (repeats share reviews)."""
    return [(row, c) for row in distinct_answers(rows) for c in row.claims or () if len(c.reviews) >= 2]


def agreement_report(rows: Sequence[Row], *, seed: int = DEFAULT_SEED,
                     resamples: int = DEFAULT_RESAMPLES) -> AgreementReport:
    """Reviewer agreement over the claims of `rows` (with reviews applied) that two or more reviewers rated."""
    rated = _rated_claims(rows)
    result = measure_agreement([{v.reviewer: v.verdict for v in c.reviews} for _, c in rated], seed=seed,
                               resamples=resamples)
    disagreements = tuple(Disagreement(row.case_id, row.answer.answer_sha256, row.question, c)
                          for row, c in rated if c.status in ("disagreement", "resolved"))
    return AgreementReport(result, disagreements)
