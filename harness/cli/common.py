"""What several sub-commands share: the text views of a run's summary, of a dry run and of reviewer and judge
agreement; who is reviewing, and where the reviews file is.

Libraries return records; these turn them into the lines a terminal shows. Every command prints through
`say()`, which escapes control characters of the model's, the documents' and the reviewers' text.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdfrag.terminal import say

from ..chart import fmt
from ..errors import InputError
from ..judged.standing import MIN_PER_VERDICT, MIN_RECALL, JudgeAgreement, Shared, judge_note
from ..metrics.registry import JUDGED_METRICS, TWIN_NOTE, describe, is_retrieval, shown_once
from ..records import VERDICTS, Manifest, Summary
from ..stats.agreement import AgreementReport
from ..stats.defaults import DEFAULT_MIN_JUDGE_KAPPA
from ..sweep.estimate import embedding_text, estimate

if TYPE_CHECKING:
    from ..settings import RunSettings
    from ..sweep.dry import DryRun

__all__ = ["agreement_text", "default_reviews", "draft_judges_text", "dry_run_text", "fmt3", "judge_agreement_text",
           "judged_passed_text", "render_summary", "reviewer_name"]

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


def default_reviews(run_dir: Path) -> Path:
    """The reviews file beside the run's cases file."""
    from ..review.store import reviews_path
    from ..runs import read_manifest

    cases = read_manifest(run_dir).inputs.get("cases", {}).get("path")
    if not cases or not Path(cases).exists():
        raise InputError(f"cannot find the cases file {cases!r} of {run_dir} from here; run from the folder the "
                         "run was made in, or pass --reviews FILE")
    return reviews_path(cases)


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


def render_summary(summary: Summary, manifest: Manifest) -> str:
    """The summary as a table: mean, then scored / not applicable / errored counts, then what it means."""
    c = summary.collection
    chunks = (f"{c['chunks']} chunks; top-k {manifest.settings.top_k}" if c.get("chunks")
              else "chunks: the system's own")
    lines = [f"system: {manifest.system.title}",
             f"cases: {summary.rows} rows ({summary.errored} errored), {summary.passes} passed every check; "
             f"collection: {c.get('documents', '?')} documents, {c.get('pages', '?')} pages, {chunks}",
             ""]
    shown = shown_once(list(summary.metrics), lambda x, y: summary.metrics[x] == summary.metrics[y])
    width = max([len("metric"), *(len(label) for _, label in shown)]) + 2
    lines.append(f"{'metric':<{width}}{'mean':>7}{'scored':>8}{'n/a':>6}{'error':>7}  definition")
    for name, label in shown:
        m = summary.metrics[name]
        where = f" [of {c['chunks']} chunks]" if is_retrieval(name) and c.get("chunks") else ""
        lines.append(f"{label:<{width}}{fmt(m.mean):>7}{m.scored:>8}{m.not_applicable:>6}{m.errored:>7}  "
                     f"{describe(name)}{where}")
        if name in JUDGED_METRICS:
            lines.append(f"{'':<{width}}  {judge_note(summary.judge)}")
    if any(name != label for name, label in shown):
        lines.append(TWIN_NOTE)
    if summary.by_origin:  # the model that drafted a case may be the one answering it: never pool them silently
        lines += ["", "drafted and hand-written cases apart (mean, scored):"]
        for name in ("passed", "hit@1", "facts", "behaviour"):
            parts = [f"{o} {fmt(m[name].mean)} ({m[name].scored})" for o, m in summary.by_origin.items() if name in m]
            lines.append(f"  {name:<12}" + "; ".join(parts))
    if summary.repeat_stability:
        flips = [f"{n} {v['flipped']}/{v['cases']}" for n, v in summary.repeat_stability.items() if v["cases"]]
        lines += ["", "verdicts that changed between repeats (cases flipped / cases): " + ", ".join(flips)]
    judged = judged_passed_text(summary)
    if judged:
        lines += ["", judged]
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.answer_statuses.items()))
    review = summary.human_claim_review
    lines += ["", f"answer statuses: {statuses}",
              f"human claim review: {review['pending']} pending, {review['reviewed']} reviewed "
              "(`rag-eval review RUN`)"]
    return "\n".join(lines)


def dry_run_text(found: DryRun, s: RunSettings, assume: float | None) -> str:
    """The counted calls and the wall-time estimate (the base settings `s` give the slots and the chat model)."""
    c = found.calls
    lines = [f"embedding texts: {c.embed_texts} distinct, {c.embed_cached} cached, {c.embed_needed} to embed",
             f"chat calls: {c.chat_calls} distinct, {c.chat_cached} cached, {c.chat_needed} to make"]
    if found.not_counted:
        lines.append(f"not counted (their system does not count its calls): {', '.join(found.not_counted)}")
    slots = s.workers * len(s.servers())
    if found.embedding is not None:
        e = found.embedding
        lines.append(embedding_text(e.chunks_needed, e.seconds_per_chunk, e.chars, e.model))
    lines.append(estimate(c.chat_needed, slots, assume=assume, out=s.out, chat_model=s.chat_model).text())
    return "\n".join(lines)


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
