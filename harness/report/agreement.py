"""The report's reviewer-agreement section: per run, the agreement figures and every disagreement."""

from __future__ import annotations

from collections.abc import Sequence

from ..chart import fmt
from ..judged.standing import JudgeAgreement, judge_agreement
from ..records import VERDICTS
from ..review.agreement import Disagreement, agreement_report
from ..stats.agreement import AgreementReport
from .markup import esc
from .report_run import ReportRun

__all__ = ["agreement_section"]


def _name(who: str) -> str:
    return esc(who or "(unnamed)")


def _disagreement_row(d: Disagreement) -> str:
    verdicts = "".join(f"<li>{_name(v.reviewer)}: {esc(v.verdict)}"
                       + (f' <span class="muted">({esc(v.note)})</span>' if v.note else "") + "</li>"
                       for v in d.claim.reviews)
    res = d.claim.resolution
    resolution = (f"{esc(res.verdict)} by {_name(res.resolver)}" if res is not None
                  else '<span class="bad">open (pending)</span>')
    return (f"<tr><td>{esc(d.case_id)}</td><td>{esc(d.claim.claim)}</td><td><ul>{verdicts}</ul></td>"
            f"<td>{resolution}</td></tr>")


def _run_part(label: str, name: str, report: AgreementReport) -> str:
    a = report.agreement
    value = fmt(a.value) + (f" {esc(a.interval.text())}" if a.value is not None
                            else f" (undefined: {esc(a.reason)})")
    who = "Cohen" if a.coefficient == "kappa" else "Krippendorff"
    rows = "".join(_disagreement_row(d) for d in report.disagreements)
    return (f"<h3>{label}: {esc(name)}</h3><p>{a.items} claims rated by two or more reviewers "
            f"({', '.join(_name(r) for r in a.reviewers)}); percent agreement {fmt(a.percent_agreement)}; "
            f"{who}'s {a.coefficient} {value} (95% bootstrap over claims, seed {a.interval.seed})</p>"
            "<table><tr><th>case</th><th>claim</th><th>verdicts</th><th>resolution</th></tr>"
            + (rows or '<tr><td colspan="4">no disagreements</td></tr>') + "</table>")


def _judge_part(label: str, name: str, judged: JudgeAgreement) -> str:
    """The judge against people: headline, percent agreement, the confusion table, every disagreement (quotes)."""
    a = judged.agreement
    head = "".join(f"<th>{esc(v)}</th>" for v in VERDICTS)
    confusion = "".join(f"<tr><th>{esc(verdict)}</th>" + "".join(f"<td>{row[v]}</td>" for v in VERDICTS) + "</tr>"
                        for verdict, row in judged.confusion().items())
    rows = "".join(f"<tr><td>{esc(d.case_id)}</td><td>{esc(d.claim.claim)}</td><td>{esc(str(d.claim.verdict))}</td>"
                   f"<td>{esc(str(d.claim.judge_verdict))}"
                   + (f' quoting {esc(d.claim.source_id or "")}: &ldquo;{esc(d.claim.quote)}&rdquo;' if d.claim.quote
                      else "")
                   + (f' <span class="muted">({esc(d.claim.reason)})</span>' if d.claim.reason else "")
                   + "</td></tr>" for d in judged.disagreements)
    return (f"<h3>{label}: {esc(name)}: judge against people</h3><p>judge {esc(judged.judge)}: "
            f"{esc(judged.headline())}; {judged.n} shared claims ({esc(judged.sample_text())}); percent agreement "
            f"{fmt(a.percent_agreement)} {esc(a.percent_interval.text())}</p>"
            f"<table><tr><th>judge / human</th>{head}</tr>{confusion}</table>{_per_verdict_table(judged)}"
            "<table><tr><th>case</th><th>claim</th><th>human</th><th>judge</th></tr>"
            + (rows or '<tr><td colspan="4">no disagreements with people</td></tr>') + "</table>")


def _per_verdict_table(judged: JudgeAgreement) -> str:
    """Per human verdict: the judge's precision and recall against people, with 95 % Wilson intervals."""
    rows = "".join(f"<tr><th>{esc(v.category)}</th><td>{esc(v.precision_text())}</td><td>{esc(v.recall_text())}</td>"
                   "</tr>" for v in judged.per_verdict())
    return ('<table><tr><th>verdict</th><th>precision (the judge\'s verdict is the people\'s)</th>'
            "<th>recall (the people's verdict found by the judge)</th></tr>" + rows + "</table>"
            '<p class="muted">95% Wilson intervals.</p>')


def agreement_section(runs: Sequence[ReportRun]) -> str:
    """HTML for each run whose claims two or more reviewers rated, and for each run a judge rated (labelled A, B
    like the rest of the report); empty when no run has either. All reviewer, claim and quote text is escaped."""
    parts = []
    for label, run in zip("AB", runs):
        report = agreement_report(run.rows)
        if report.agreement.items:
            parts.append(_run_part(label, run.name, report))
        judged = judge_agreement(run.rows)
        if judged is not None:  # the judge against people: figures, confusion table, disagreements with quotes
            parts.append(_judge_part(label, run.name, judged))
    return "<h2>Reviewer agreement</h2>" + "".join(parts) if parts else ""
