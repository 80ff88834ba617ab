"""How far reviewers agree on the claims of a run's answers, and where they disagree (statistics in
`harness/stats/agreement.py`). The report and its text rendering are shared with drafted cases
(`harness/drafting/agreement.py`): only the item named (`unit`) and the disagreement lines differ."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ..records import ClaimRecord, ClaimResolution, ReviewerVerdict, Row
from ..stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, Agreement, measure_agreement
from .store import distinct_answers

__all__ = ["AgreementReport", "Disagreement", "DisagreementItem", "agreement_report", "render_agreement",
           "verdict_text"]


class DisagreementItem(Protocol):
    """What the agreement report needs of a disagreement, whatever the reviewed item is."""

    @property
    def open(self) -> bool: ...

    def to_json(self) -> dict[str, Any]: ...

    def lines(self) -> list[str]:
        """The item, then one indented line per reviewer and one for the resolution if any."""
        ...


D = TypeVar("D", bound=DisagreementItem)


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


@dataclass(frozen=True)
class AgreementReport(Generic[D]):
    """The agreement figures over the items (`unit`: claims, drafts) two or more reviewers rated, and every
    disagreement among them."""

    agreement: Agreement
    disagreements: tuple[D, ...]
    unit: str = "claims"

    @property
    def open_disagreements(self) -> int:
        return sum(d.open for d in self.disagreements)

    def to_json(self) -> dict[str, Any]:
        """`claims` (or the report's `unit`: the items rated by two or more reviewers), `reviewers`,
        `percent_agreement` and its interval, `kappa` (two reviewers) or `alpha` (more) with `interval`,
        `undefined_reason` and `disagreements`."""
        a = self.agreement
        return {self.unit: a.items, "reviewers": list(a.reviewers), "percent_agreement": a.percent_agreement,
                "percent_agreement_interval": a.percent_interval.to_dict(), a.coefficient: a.value,
                "interval": a.interval.to_dict(), "undefined_reason": a.reason,
                "disagreements": [d.to_json() for d in self.disagreements]}


def _rated_claims(rows: Sequence[Row]) -> list[tuple[Row, ClaimRecord]]:
    """(row, claim) for each claim rated by two or more reviewers, each answer once (repeats share reviews)."""
    return [(row, c) for row in distinct_answers(rows) for c in row.claims or () if len(c.reviews) >= 2]


def agreement_report(rows: Sequence[Row], *, seed: int = DEFAULT_SEED,
                     resamples: int = DEFAULT_RESAMPLES) -> AgreementReport[Disagreement]:
    """Reviewer agreement over the claims of `rows` (with reviews applied) that two or more reviewers rated."""
    rated = _rated_claims(rows)
    result = measure_agreement([{v.reviewer: v.verdict for v in c.reviews} for _, c in rated], seed=seed,
                               resamples=resamples)
    disagreements = tuple(Disagreement(row.case_id, row.answer.answer_sha256, row.question, c)
                          for row, c in rated if c.status in ("disagreement", "resolved"))
    return AgreementReport(result, disagreements)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def render_agreement(report: AgreementReport[Any]) -> str:
    """The agreement report as text: the figures, then each disagreement with every reviewer's verdict."""
    a, unit = report.agreement, report.unit
    label = "Cohen's kappa" if a.coefficient == "kappa" else "Krippendorff's alpha (nominal)"
    pi, ci = a.percent_interval, a.interval
    reviewers = ", ".join(r or "(unnamed)" for r in a.reviewers) or "none"
    lines = [f"{unit} seen by two or more reviewers: {a.items} (reviewers: {reviewers})",
             f"percent agreement: {_fmt(a.percent_agreement)} {pi.text()}",
             f"{label}: {_fmt(a.value)}" + (f" {ci.text()}" if a.value is not None else "")
             + (f" (undefined: {a.reason})" if a.reason else ""),
             f"intervals: {int(ci.level * 100)}% percentile bootstrap over {unit}, {ci.resamples} resamples, "
             f"seed {ci.seed}" + (f"; {ci.undefined_resamples} resamples undefined" if ci.undefined_resamples
                                  else "")]
    total, open_ = len(report.disagreements), report.open_disagreements
    lines.append(f"disagreements: {total} ({open_} open, {total - open_} resolved)")
    for d in report.disagreements:
        lines += d.lines()
    return "\n".join(lines)
