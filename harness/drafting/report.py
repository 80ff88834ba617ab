"""The draft report: drafts per page and per document, rejection reasons with counts, acceptance rate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from .records import Draft
from .select import PageSelection


@dataclass
class Counts:
    """Drafts of one page or document: written, passed verification, failed, errors, and human decisions."""

    drafts: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    accepted: int = 0  # accepted or edited
    rejected: int = 0
    pending: int = 0

    def add(self, draft: Draft) -> None:
        if draft.kind == "error":
            self.errors += 1
            return
        self.drafts += 1
        self.passed += draft.verification.passed
        self.failed += not draft.verification.passed
        status = draft.decision.status
        self.accepted += status in ("accepted", "edited")
        self.rejected += status == "rejected"
        self.pending += status == "pending" and draft.verification.passed


@dataclass
class DraftReport:
    """Everything `rag-eval draft report` prints. `acceptance_rate` = accepted / (accepted + rejected), None
    before any human decision; `pass_rate` = drafts passing verification / drafts (errors left out)."""

    pages: dict[str, Counts] = field(default_factory=dict)
    documents: dict[str, Counts] = field(default_factory=dict)
    total: Counts = field(default_factory=Counts)
    reasons: Counter = field(default_factory=Counter)  # verification reason code -> drafts
    human_reasons: Counter = field(default_factory=Counter)  # rejection text -> drafts
    tags: Counter = field(default_factory=Counter)
    skipped_pages: tuple[tuple[str, str], ...] = ()
    open_disagreements: int = 0  # drafts kept pending because their reviewers disagree and nobody resolved it
    errors: list[tuple[str, str]] = field(default_factory=list)  # (page id, why its call failed), in file order

    @property
    def pass_rate(self) -> float | None:
        return self.total.passed / self.total.drafts if self.total.drafts else None

    @property
    def acceptance_rate(self) -> float | None:
        decided = self.total.accepted + self.total.rejected
        return self.total.accepted / decided if decided else None


def build_report(drafts: Sequence[Draft], selection: PageSelection | None = None,
                 skipped: Sequence[tuple[str, str]] = ()) -> DraftReport:
    """Count drafts per page and document (selected pages without drafts appear with zeros). `skipped` lists
    pages left out and why, when there is no selection at hand (read from the drafts manifest)."""
    report = DraftReport(skipped_pages=selection.skipped if selection else tuple(skipped))
    if selection:
        for doc in selection.documents:
            report.documents.setdefault(doc, Counts())
        for page in selection.pages:
            report.pages.setdefault(page.source_id, Counts())
    for d in drafts:
        for bucket in (report.pages.setdefault(d.source_id, Counts()), report.documents.setdefault(d.doc_id, Counts()),
                       report.total):
            bucket.add(d)
        report.reasons.update(r.code for r in d.verification.reasons)
        report.tags.update(d.verification.tags if d.kind != "error" else ())
        if d.kind == "error":
            report.errors.append((d.source_id, d.error or "unknown error"))
        if d.decision.status == "rejected":
            report.human_reasons[d.decision.reason or "(no reason)"] += 1
        report.open_disagreements += d.in_disagreement and d.resolution is None
    return report


def render_draft_report(report: DraftReport) -> str:
    """The report as plain-text tables."""
    head = f"{'':<28}{'drafts':>7}{'passed':>7}{'failed':>7}{'errors':>7}{'accepted':>9}{'rejected':>9}{'pending':>8}"

    def row(name: str, c: Counts) -> str:
        return (f"{name:<28}{c.drafts:>7}{c.passed:>7}{c.failed:>7}{c.errors:>7}{c.accepted:>9}{c.rejected:>9}"
                f"{c.pending:>8}")

    lines = ["coverage by document", head] + [row(k, v) for k, v in sorted(report.documents.items())]
    lines += [row("all", report.total), "", "coverage by page", head]
    lines += [row(k, v) for k, v in sorted(report.pages.items(), key=lambda kv: _page_key(kv[0]))]
    lines += [f"skipped {pid}: {why}" for pid, why in report.skipped_pages]
    lines += ["", "verification failures (reason: drafts)"]
    lines += [f"  {code}: {n}" for code, n in report.reasons.most_common()] or ["  none"]
    lines += [f"draft errors (page: why; run the same command again to retry): {len(report.errors)}"]
    lines += [f"  {page}: {why}" for page, why in report.errors] or ["  none"]
    lines += ["human rejections (reason: drafts)"]
    lines += [f"  {text}: {n}" for text, n in report.human_reasons.most_common()] or ["  none"]
    lines += ["tags: " + (", ".join(f"{t} {n}" for t, n in sorted(report.tags.items())) or "none")]
    decided = report.total.accepted + report.total.rejected
    lines.append(f"passed verification: {_rate(report.pass_rate)} of {report.total.drafts} drafts; accepted by a "
                 f"human: {_rate(report.acceptance_rate)} of {decided} decided ({report.total.pending} passed drafts "
                 "pending" + (f", {report.open_disagreements} of them because reviewers disagree: review --resolve"
                              if report.open_disagreements else "") + ")")
    return "\n".join(lines)


def _page_key(page_id: str) -> tuple[str, int]:
    doc, _, number = page_id.rpartition("#p")
    return doc, int(number) if number.isdigit() else 0


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"
