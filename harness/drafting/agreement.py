"""How far reviewers agree on drafted cases: the same statistics and report (`harness/stats/agreement.py`) as for
claims, over drafts two or more reviewers decided.

Each reviewer's verdict on a draft is `accepted` or `rejected`; an edit counts as its editor's acceptance of the
edited draft. The JSON names the count of such drafts `drafts` (claim review: `claims`); every other key is the
same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, AgreementReport, measure_agreement
from .records import Decision, Draft

__all__ = ["DraftDisagreement", "draft_agreement_report"]


def decision_text(d: Decision) -> str:
    """`ann: rejected (too easy)`; `edited` is shown as the acceptance it counts as."""
    verdict = "accepted (edited)" if d.status == "edited" else d.status
    return f"{d.by or '(unnamed)'}: {verdict}" + (f" ({d.reason})" if d.reason else "")


@dataclass(frozen=True)
class DraftDisagreement:
    """A draft whose reviewers gave different decisions (open, or resolved)."""

    draft: Draft

    @property
    def open(self) -> bool:
        return self.draft.resolution is None

    def to_json(self) -> dict[str, Any]:
        d = self.draft
        return {"draft_id": d.draft_id, "source_id": d.source_id, "question": d.question,
                "status": "disagreement" if self.open else "resolved",
                "decisions": [{"reviewer": r.by, "decision": r.verdict, "edited": r.status == "edited",
                               "reason": r.reason, "at": r.at} for r in d.reviews],
                "resolution": None if d.resolution is None else asdict(d.resolution)}

    def lines(self) -> list[str]:
        d = self.draft
        lines = [f"- draft {d.draft_id} ({d.source_id}): {d.question}"]
        lines += [f"    {decision_text(r)}" for r in d.reviews]
        if (res := d.resolution) is not None:
            lines.append(f"    resolved by {res.by or '(unnamed)'}: {res.status}"
                         + (f" ({res.reason})" if res.reason else ""))
        return lines


def draft_agreement_report(drafts: Sequence[Draft], *, seed: int = DEFAULT_SEED,
                           resamples: int = DEFAULT_RESAMPLES) -> AgreementReport[DraftDisagreement]:
    """Reviewer agreement over the drafts two or more reviewers decided, and every disagreement among them."""
    rated = [d for d in drafts if len(d.reviews) >= 2]
    result = measure_agreement([{r.by or "": r.verdict for r in d.reviews} for d in rated], seed=seed,
                               resamples=resamples)
    return AgreementReport(result, tuple(DraftDisagreement(d) for d in rated if d.in_disagreement), unit="drafts")
