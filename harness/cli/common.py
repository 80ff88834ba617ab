"""What several sub-commands share: the text views of reviewer and judge agreement, and who is reviewing.

Libraries return records; these turn them into the lines a terminal shows. Every command prints through
`say()`, which escapes control characters of the model's, the documents' and the reviewers' text.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pdfrag.terminal import say

from ..errors import InputError
from ..judged import MIN_PER_VERDICT, MIN_RECALL, JudgeAgreement, Shared
from ..records import VERDICTS, Summary
from ..stats.agreement import AgreementReport
from ..stats.defaults import DEFAULT_MIN_JUDGE_KAPPA

__all__ = ["agreement_text", "draft_judges_text", "fmt3", "judge_agreement_text", "judged_passed_text",
           "reviewer_name"]

_ASKS = 3  # a terminal asks this many times for a usable name before giving up


def reviewer_name(given: str | None, *, required: bool = True, ask: Callable[[str], str] = input,
                  interactive: bool | None = None) -> str:
    """Whose verdicts or decisions these are: `--reviewer` when given; else the name remembered in the cache
    folder (`harness.review.reviewer`); else, on a terminal, asked once and remembered. Never the login account.
    Without a terminal and nothing remembered: InputError naming --reviewer when `required`, else "" (an import
    whose CSV names the reviewer on each line; a line that names nobody is then its problem)."""
    from ..review.reviewer import checked_name, remember_reviewer, remembered_reviewer, reviewer_file

    if given is not None:
        return checked_name(given)
    found = remembered_reviewer()
    if found is not None:
        say(f"reviewing as {found} (remembered in {reviewer_file()}; --reviewer NAME for someone else)",
            file=sys.stderr)
        return found
    if not (sys.stdin.isatty() if interactive is None else interactive):
        if not required:
            return ""
        raise InputError(f"who is reviewing? give --reviewer NAME (on a terminal the name is asked once and "
                         f"remembered in {reviewer_file()}); the login name is never taken for yours")
    for attempt in range(_ASKS):
        try:
            name = checked_name(ask("your name for your reviews (asked once, remembered for next time): "),
                                where="reviewer name")
        except InputError as exc:
            if attempt == _ASKS - 1:
                raise
            say(f"{exc}", file=sys.stderr)
            continue
        except EOFError:
            raise InputError("no reviewer name given; give --reviewer NAME") from None
        say(f"remembered as {name} in {remember_reviewer(name)}; --reviewer NAME for someone else", file=sys.stderr)
        return name
    raise AssertionError("unreachable")  # the last attempt returns or raises


def fmt3(value: float | None) -> str:
    """A figure to three decimals, `n/a` for none."""
    return "n/a" if value is None else f"{value:.3f}"


def judged_passed_text(summary: Summary) -> str | None:
    """Whose `passed` a run that asked for --judged-passed carries (summary.json `judged_passed`); None when it did
    not ask."""
    block = summary.judged_passed
    if block is None:
        return None
    if block.applied:
        return f"--judged-passed: `passed` reads the judge's verdicts where no person's exists ({block.text})"
    return (f"--judged-passed refused: {block.refusal}; `passed` is the people's ({block.text}; floor: "
            f"kappa's lower bound >= {block.min_kappa:g} over >= {block.min_shared} shared claims, each verdict given "
            f"by people on >= {MIN_PER_VERDICT} and recalled by the judge >= {MIN_RECALL:g} at its Wilson lower bound: "
            "docs/judge.md)")


def agreement_text(report: AgreementReport[Any]) -> str:
    """The agreement report as text: the figures, then each disagreement with every reviewer's verdict."""
    a, unit = report.agreement, report.unit
    label = "Cohen's kappa" if a.coefficient == "kappa" else "Krippendorff's alpha (nominal)"
    pi, ci = a.percent_interval, a.interval
    reviewers = ", ".join(r or "(unnamed)" for r in a.reviewers) or "none"
    lines = [f"{unit} seen by two or more reviewers: {a.items} (reviewers: {reviewers})",
             f"percent agreement: {fmt3(a.percent_agreement)} {pi.text()}",
             f"{label}: {fmt3(a.value)}" + (f" {ci.text()}" if a.value is not None else "")
             + (f" (undefined: {a.reason})" if a.reason else ""),
             f"intervals: {int(ci.level * 100)}% percentile bootstrap over {unit}, {ci.resamples} resamples, "
             f"seed {ci.seed}" + (f"; {ci.undefined_resamples} resamples undefined" if ci.undefined_resamples
                                  else "")]
    total, open_ = len(report.disagreements), report.open_disagreements
    lines.append(f"disagreements: {total} ({open_} open, {total - open_} resolved)")
    for d in report.disagreements:
        lines += d.lines()
    return "\n".join(lines)


def _shared_lines(s: Shared) -> list[str]:
    c = s.claim
    quote = f' quoting {c.source_id}: "{c.quote}"' if c.quote else ""
    why = f" ({c.reason})" if c.reason else ""
    return [f"- case {s.case_id}: {c.claim}", f"    human: {c.verdict}",
            f"    {c.judge}: {c.judge_verdict}{quote}{why}"]


def _per_verdict_lines(judged: JudgeAgreement) -> list[str]:
    lines = ["per verdict (precision: the judge's verdict is the people's; recall: the people's verdict found by the "
             "judge; 95% Wilson intervals):", f"  {'':<14}{'precision':<30}recall"]
    for v in judged.per_verdict():
        lines.append(f"  {v.category:<14}{v.precision_text():<30}{v.recall_text()}")
    return lines


def judge_agreement_text(judged: JudgeAgreement) -> str:
    """A judge against people: the headline, percent agreement, the confusion table, precision and recall per
    verdict, every disagreement."""
    a, pi = judged.agreement, judged.agreement.percent_interval
    lines = [f"judge {judged.judge} against people: {judged.n} shared claims; {judged.sample_text()}",
             judged.headline(),
             f"percent agreement: {fmt3(a.percent_agreement)} {pi.text()}"
             + (f"; kappa undefined: {a.reason}" if a.reason and judged.n else ""),
             "confusion (rows: judge, columns: human):",
             "  " + " " * 12 + "".join(f"{v:>14}" for v in VERDICTS)]
    for verdict, row in judged.confusion().items():
        lines.append(f"  {verdict:<12}" + "".join(f"{row[v]:>14}" for v in VERDICTS))
    lines += _per_verdict_lines(judged)
    check = judged.floor()
    lines.append(f"--judged-passed floor (default --min-judge-kappa {DEFAULT_MIN_JUDGE_KAPPA:g}; docs/judge.md): "
                 + ("clears" if not check.reasons else "not yet: " + "; ".join(check.reasons)))
    lines.append(f"disagreements with people: {len(judged.disagreements)}")
    for d in judged.disagreements:
        lines += _shared_lines(d)
    return "\n".join(lines)


def draft_judges_text(judges: Sequence[Mapping[str, Any]]) -> str:
    """The judges' agreement with people on drafts as text, each disagreement with the judge's reason."""
    lines = []
    for j in judges:
        ci = j["interval"]
        kappa = "undefined" if j["kappa"] is None else f"{j['kappa']:.3f} [{fmt3(ci['low'])}, {fmt3(ci['high'])}]"
        lines += [f"judge {j['reviewer']} against people: {j['drafts']} drafts both decided; kappa {kappa}; "
                  f"percent agreement {fmt3(j['percent_agreement'])}",
                  f"disagreements with people: {len(j['disagreements'])}"]
        for d in j["disagreements"]:
            why = f" ({d['reason']})" if d["reason"] else ""
            lines += [f"- draft {d['draft_id']}: {d['question']}", f"    human: {d['human']}",
                      f"    {j['reviewer']}: {d['judge']}{why}"]
    return "\n".join(lines)
