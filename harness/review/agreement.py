"""How far reviewers agree on the claims of a run's answers, and where they disagree. The statistics and the
report record (`AgreementReport`) are `harness/stats/agreement.py`'s, shared with drafted cases
(`harness/drafting/agreement.py`): only the item named (`unit`) and the disagreement lines differ; the CLI renders
both (`harness/cli/common.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..records import AnyRow, ClaimRecord, ClaimResolution, ReviewerVerdict
from ..stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, AgreementReport, measure_agreement
from .store import distinct_answers

__all__ = ["Disagreement", "agreement_report", "verdict_text"]


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

    def lines(self) -> list[str]:
        lines = [f"- case {self.case_id}: {self.claim.claim}"] + [f"    {verdict_text(v)}" for v in self.claim.reviews]
        if (res := self.claim.resolution) is not None:
            lines.append(f"    resolved by {res.resolver or '(unnamed)'}: {verdict_text(res)}")
        return lines


def verdict_text(v: ReviewerVerdict | ClaimResolution) -> str:
    """`ann: supported by doc.pdf#p1 (note)`; a resolution without the name."""
    who = f"{v.reviewer or '(unnamed)'}: " if isinstance(v, ReviewerVerdict) else ""
    return f"{who}{v.verdict}" + (f" by {v.source_id}" if v.source_id else "") + (f" ({v.note})" if v.note else "")


def _rated_claims(rows: Sequence[AnyRow]) -> list[tuple[AnyRow, ClaimRecord]]:
    """(row, claim) for each claim rated by two or more reviewers, each answer once (repeats share reviews)."""
    return [(row, c) for row in distinct_answers(rows) for c in row.claims or () if len(c.reviews) >= 2]


def agreement_report(rows: Sequence[AnyRow], *, seed: int = DEFAULT_SEED,
                     resamples: int = DEFAULT_RESAMPLES) -> AgreementReport[Disagreement]:
    """Reviewer agreement over the claims of `rows` (with reviews applied) that two or more reviewers rated."""
    rated = _rated_claims(rows)
    result = measure_agreement([{v.reviewer: v.verdict for v in c.reviews} for _, c in rated], seed=seed,
                               resamples=resamples)
    disagreements = tuple(Disagreement(row.case_id, row.answer.answer_sha256, row.question, c)
                          for row, c in rated if c.status in ("disagreement", "resolved"))
    return AgreementReport(result, disagreements)
