"""A self-contained HTML report of a run (optionally beside a second run): no script, no network, no assets.

Every piece of document, model, label and reviewer text goes through `markup.esc` (escaped, bidi isolated) before
it is placed in the page, so markup inside a PDF stays text. A Content-Security-Policy that forbids scripts and
every fetch is a second line of defence, not the first.
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from pdfrag.text import cited_passage, find_quote

from ..cases import Evidence
from ..chart import fmt, svg_grouped_bars
from ..judged.standing import judge_note
from ..metrics.observation import Retrieved, first_rank
from ..metrics.registry import JUDGED_METRICS, TWIN_NOTE, family, shown_once
from ..records import AnyRow, Row, Summary, in_bulk
from ..runs import LoadedRun
from ..stats.defaults import DEFAULT_SEED
from ..stats.paired import mean_interval
from ..summary import summarize
from ..systems.traits import traits_for
from .agreement import agreement_section
from .funnel import stage
from .markup import CSP_META, WRAP_CSS, attr, esc
from .report_run import Key, ReportRun, report_run_of
from .row_warnings import count_warnings, warning_lines
from .sections import (
    LIST_LIMIT,
    CaseIndex,
    breakdown_section,
    contents_section,
    failing_text,
    funnel_section,
    index_cases,
    more_line,
)
from .settings_diff import NOT_SETUP, manifest_diff

__all__ = ["render_report", "highlight_quote", "chart_families"]

_FAMILIES = (("Hit@k", ("hit",)), ("Recall@k", ("recall",)), ("Reciprocal rank", ("rr",)),
             ("Answer checks", ("facts", "behaviour", "quote_valid")),
             ("Claim support (human review)", ("claims_supported",)),
             ("The five checks, and passed", ("retrieval_recall", "citation_precision", "claim_support",
                                               "key_point_coverage", "abstention", "passed")))
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;width:100%;margin:1em 0}th,td{border:1px solid #ccc;padding:.4em;vertical-align:top;
text-align:left}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:1em}.passage{white-space:pre-wrap;font-size:.9em;background:#fafafa;
padding:.4em;border-left:3px solid #ccc}mark{background:#ffe27a}.status{font-weight:bold}.bad{color:#a11}
.good{color:#171}.muted{color:#666;font-size:.9em}ul{margin:.2em 0;padding-left:1.2em}
.track{background:#eee;height:.7em;width:12em;margin-top:.2em}.fill{height:100%}.fill.bad{background:#c44}
.fill.good{background:#4a4}.funnel td{vertical-align:middle}.stage{font-weight:bold;margin-bottom:.3em}
ul.toc{list-style:none;padding-left:0}ul.toc a{margin-right:.2em}
"""





def highlight_quote(passage: str, quote: str) -> str:
    """HTML of the normalised passage with the quote inside <mark>; each piece is escaped before wrapping."""
    text, span = find_quote(passage, quote)
    if span is None:
        return esc(text)
    a, b = span
    return f"{esc(text[:a])}<mark>{esc(text[a:b])}</mark>{esc(text[b:])}"


def chart_families(metrics: Sequence[str]) -> list[tuple[str, list[str]]]:
    """The run's metrics grouped into one chart each: hit@k, recall@k, rr, answer checks, claim support."""
    out = []
    for title, families in _FAMILIES:
        names = [m for m in metrics if family(m) in families]
        if names:
            out.append((title, names))
    return out


@in_bulk  # strings and tuples by the hundred thousand beside the rows: no cyclic collection walks them all
def render_report(run: LoadedRun | ReportRun, vs: LoadedRun | ReportRun | None = None, *, limit: int = LIST_LIMIT,
                  all_settings: bool = False) -> str:
    """The whole HTML page, what failed first: header, failure funnel, contents (by failure kind, tag and
    document), manifest differences (with `vs`), breakdown by tag and document, summary table, charts, then the
    failing cases and the passing ones. `vs` is the baseline: it is shown as A and `run` as B, as in
    `rag-eval compare VS RUN`. Every list shows at most `limit` items, then "first N of M" and the
    `rag-eval export` command for every row (`harness.report.sections`). A `ReportRun` (`read_report_run`) holds
    each row as the report reads it: the case tables read the rows they show whole."""
    runs = [r if isinstance(r, ReportRun) else report_run_of(r) for r in ([vs, run] if vs is not None else [run])]
    summaries = [summarize(r.rows, r.manifest.metrics, r.manifest.collection.to_json(), stability=False)
                 for r in runs]
    names = [r.name for r in runs]
    index = index_cases(runs, limit=limit)
    title = f"pdf-rag-eval report: {run.name}" + (f" vs {vs.name}" if vs else "")
    body = [f"<h1>{esc(title)}</h1>", _run_header(runs, summaries), _warnings_section(runs), funnel_section(runs),
            contents_section(runs, index)]
    if vs is not None:
        body.append(_diff_table(vs.manifest.to_json(), run.manifest.to_json(), all_settings=all_settings))
    metrics = run.manifest.metrics
    body += [breakdown_section(runs, index), _summary_table(metrics, summaries, names),
             '<h2 id="charts">Charts</h2><p class="muted">Each bar is a mean over the cases where the metric applies; '
             'the whisker is its 95 % bootstrap interval over those cases.</p><div class="charts">']
    families = chart_families(metrics)
    charted = [m for _, chart_metrics in families for m in chart_metrics]
    whiskers = [_chart_intervals(r.rows, charted, s.na_as_pass) for r, s in zip(runs, summaries)]
    for chart_title, chart_metrics in families:
        series = [(n, [s.mean(m) for m in chart_metrics]) for n, s in zip(names, summaries)]
        spans = [[w[m] for m in chart_metrics] for w in whiskers]
        if "claims_supported" in chart_metrics:
            chart_title += "; pending " + " | ".join(str(s.human_claim_review["pending"]) for s in summaries)
        body.append(svg_grouped_bars(chart_title, chart_metrics, series, intervals=spans))
    wholes = [r.whole_rows(index.shown) for r in runs]
    body += ["</div>", agreement_section(runs), _case_table(runs, index, wholes, failing=True),
             _case_table(runs, index, wholes, failing=False)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"{CSP_META}<title>{esc(title)}</title><style>{_CSS}{WRAP_CSS}</style></head>\n<body>\n" + "\n".join(body)
            + "\n</body></html>\n")


_CHART_RESAMPLES = 2_000  # a whisker on a chart; compare's numbers use the full default
_COUNTED_ABOVE = 20_000  # cases beyond which a whisker's resamples are drawn as counts of the distinct values


def _chart_interval(rows: Sequence[AnyRow], metric: str, na_as_pass: bool) -> tuple[float, float] | None:
    return _chart_intervals(rows, [metric], na_as_pass)[metric]


def _chart_intervals(rows: Sequence[AnyRow], metrics: Sequence[str], na_as_pass: bool
                     ) -> dict[str, tuple[float, float] | None]:
    """Per metric, the 95 % bootstrap interval of its mean, resampling cases: a case's repeats are averaged first,
    so repeats of one case do not count as more cases (the values `metric_values` and `per_case_means` give)."""
    scored = [r for r in rows if r.error is None]
    if len({r.case_id for r in scored}) == len(scored):  # one row per case: its value is the case's mean
        columns: list[list[float]] = [[] for _ in metrics]
        for r in scored:
            get = r.metrics.get
            for column, metric in zip(columns, metrics):
                value = get(metric)
                if value is not None:
                    column.append(float(value))
                elif na_as_pass:
                    column.append(1.0)
        return {m: _interval(column) for m, column in zip(metrics, columns)}
    by_case: dict[str, dict[str, list[float]]] = {m: {} for m in metrics}
    for r in scored:
        for metric, cases in by_case.items():
            value = r.metrics.get(metric)
            if value is not None or na_as_pass:
                cases.setdefault(r.case_id, []).append(1.0 if value is None else float(value))
    return {metric: _interval([sum(v) / len(v) for v in cases.values()]) for metric, cases in by_case.items()}


def _interval(values: list[float]) -> tuple[float, float] | None:
    if len(values) <= _COUNTED_ABOVE:
        return mean_interval(values, resamples=_CHART_RESAMPLES)
    return _counted_interval(np.asarray(values))


def _counted_interval(values: np.ndarray) -> tuple[float, float]:
    """`mean_interval` for many cases: the same bootstrap (n draws with replacement), each resample drawn as how
    often it takes each distinct value (a multinomial), so its cost follows the distinct values, not the cases; a
    0/1 metric has two. Seeded, but another random stream than drawing indexes, so it is kept to large runs: a
    whisker on a chart of 100k cases is a pixel wide.
    TODO(issue 31, compare part): move into harness/stats/ beside the compare bootstrap drawn from counts."""
    levels, counts = np.unique(values, return_counts=True)
    n = len(values)
    draws = np.random.default_rng(DEFAULT_SEED).multinomial(n, counts / n, size=_CHART_RESAMPLES)
    low, high = np.percentile(draws @ levels / n, [2.5, 97.5])
    return float(low), float(high)


def _run_header(runs: Sequence[ReportRun], summaries: Sequence[Summary]) -> str:
    items = []
    for label, r, s in zip("AB", runs, summaries):
        m, review = r.manifest.to_json(), s.human_claim_review
        items.append(f"<li><b>{label}: {esc(r.name)}</b> — {_system_text(m, s)}; human claim review: "
                     f"{review['reviewed']} reviewed, {review['pending']} pending"
                     + (f"; rescored from {esc(m['rescored_from'].get('run_id', ''))}" if m.get("rescored_from")
                        else "") + "</li>")
    return "<ul>" + "".join(items) + "</ul>"


def _system_text(manifest: dict, s: Summary) -> str:
    """The system as it describes itself, then the rows and collection. Chunk size and top-k are ours: they are
    shown for the built-in systems only, and another system's own settings come from its `describe()`."""
    system, settings, c = manifest.get("system", {}), manifest.get("settings", {}), s.collection
    rows = f"{s.rows} rows ({s.errored} errored); {esc(c.get('documents', '?'))} documents"
    if traits_for(str(settings.get("system") or "")).label_checks_chunks:  # our chunker: our chunk size, top-k
        return (f"{esc(_or_unknown(system.get('system')))}; {rows}, {esc(_or_unknown(c.get('chunks')))} chunks; "
                f"chunk size {esc(_or_unknown(settings.get('chunk_size')))}, top-k "
                f"{esc(_or_unknown(settings.get('top_k')))}")
    name = " ".join(str(system[k]) for k in ("name", "version") if system.get(k) is not None) or "?"
    told = system.get("system") if system.get("system") not in (None, system.get("name")) else None
    own = system.get("settings")
    parts = [f"{esc(name)}" + (f" ({esc(told)})" if told else "")
             + (f" [--system {esc(settings['system'])}]" if settings.get("system") else ""),
             *([f"its settings: {esc(json.dumps(own, ensure_ascii=False, sort_keys=True))}"] if own else []), rows]
    if c.get("chunks"):
        parts[-1] += f", {esc(c['chunks'])} chunks"
    return "; ".join(parts)


def _warnings_section(runs: Sequence[ReportRun]) -> str:
    """The rows' warnings by kind, before any number: a warning on most rows is a setup error to fix first."""
    out = []
    for label, r in zip("AB" if len(runs) > 1 else " ", runs):
        lines = warning_lines(count_warnings(r.rows), len(r.rows))
        if lines:
            head = f"{label.strip()}: " if label.strip() else ""
            out.append(f'<div class="bad"><b>{esc(head + lines[0])}</b><br>'
                       + "<br>".join(esc(line.strip()) for line in lines[1:]) + "</div>")
    return ('<h2 id="warnings">Row warnings</h2>' + "".join(out)) if out else ""


def _or_unknown(value: object) -> object:
    return "?" if value is None else value


def _diff_table(a: dict, b: dict, *, all_settings: bool = False) -> str:
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(va)}</td><td>{esc(vb)}</td></tr>"
                   for k, va, vb in manifest_diff(a, b, all_settings=all_settings))
    return ("<h2>What differs between the runs</h2><table><tr><th>manifest key</th><th>A</th><th>B</th></tr>"
            + (rows or f'<tr><td colspan="3">nothing besides {esc(NOT_SETUP)}</td></tr>') + "</table>")


def _summary_table(metrics: Sequence[str], summaries: Sequence[Summary], names: Sequence[str]) -> str:
    head = "".join(f"<th>{esc(label)}: {esc(n)}</th>" for label, n in zip("AB", names))
    head += "<th>delta (B − A)</th>" if len(names) > 1 else ""
    out = [f"<h2 id=\"summary\">Summary</h2><table><tr><th>metric</th>{head}<th>scored / n/a / errored</th></tr>"]
    same = lambda x, y: all(s.metrics.get(x) == s.metrics.get(y) for s in summaries)  # noqa: E731
    shown = shown_once(list(metrics), same)
    for name, label in shown:
        cells, means = [], []
        for s in summaries:
            means.append(s.mean(name))
            cells.append(f'<td class="num">{fmt(s.mean(name))}</td>')
        if len(summaries) > 1:
            a, b = means[0], means[1]
            delta = None if a is None or b is None else b - a
            cells.append(f'<td class="num">{"n/a" if delta is None else f"{delta:+.3f}"}</td>')
        counts = " | ".join(f"{m.scored} / {m.not_applicable} / {m.errored}" if (m := s.metrics.get(name))
                            else "0 / 0 / 0" for s in summaries)
        out.append(f"<tr><td>{esc(label)}</td>{''.join(cells)}<td>{counts}</td></tr>")
        if name in JUDGED_METRICS:  # a judged number never without the judge's measured agreement
            notes = "; ".join(f"{label}: {esc(judge_note(s.judge))}"
                              for label, s in zip("AB", summaries))
            out.append(f'<tr><td></td><td class="muted" colspan="{len(summaries) + 2}">{notes}</td></tr>')
    twins = f'<p class="muted">{esc(TWIN_NOTE)}</p>' if any(n != label for n, label in shown) else ""
    return "".join(out) + "</table>" + twins


def _case_table(runs: Sequence[ReportRun], index: CaseIndex, wholes: Sequence[dict[Key, Row]], *, failing: bool
                ) -> str:
    """The failing cases (lost at some stage in any run, by stage) or the passing ones, one anchored row each; the
    first `index.limit` of them, from their whole rows (`wholes`, per run)."""
    keys = [k for k in index.keys if index.failing(k) == failing]
    anchor, title = ("failing", "Failing cases") if failing else ("passing", "Passing cases")
    head = "".join(f"<th>{label}: {esc(run.name)}</th>" for label, run in zip("AB", runs))
    if len(keys) > index.limit:
        count = f"first {index.limit:,} of {len(keys):,}"
    else:
        count = failing_text(index, len(runs)) if failing else f"{len(keys)}" + (" passing in both" if len(runs) > 1
                                                                                else "")
    out = [f'<h2 id="{anchor}">{title} ({count})</h2>',
           more_line(index, index.limit, len(keys), "failing cases" if failing else "passing cases"),
           f"<table><tr><th>case</th>{head}</tr>"]
    for key in keys[:index.limit]:
        whole = [w.get(key) for w in wholes]
        cells = "".join(f"<td>{_stage_badge(s)}{_run_cell(r)}</td>" if r else '<td class="muted">not in this run</td>'
                        for r, s in zip(whole, index.stages[key]))
        first = next(r for r in whole if r is not None)
        out.append(f'<tr id="{attr(index.anchors[key])}"><td>{_case_cell(first, key[1])}</td>{cells}</tr>')
    if not keys:
        out.append(f'<tr><td colspan="{len(runs) + 1}" class="muted">none</td></tr>')
    return "\n".join(out) + "</table>"


def _stage_badge(key: str | None) -> str:
    found = stage(key or "passed")
    return f'<div class="stage {"good" if found.key == "passed" else "bad"}">{esc(found.label)}</div>'


def _case_cell(row: Row, repeat: int) -> str:
    exp = row.expected
    evidence = "".join(f"<li>{esc(e.source_id)}" + (f": “{esc(e.quote)}”" if e.quote else "") + "</li>"
                       for e in exp.evidence)
    evidence = evidence or ("<li>none (should abstain)</li>" if exp.abstain else "<li>none</li>")
    facts = "; ".join(" / ".join(esc(alt) for alt in f) for f in exp.facts) or "none"
    return (f"<b>{esc(row.case_id)}</b>" + (f" (repeat {repeat})" if repeat else "")
            + f' <span class="muted">{esc(", ".join(row.tags))}</span>'
            + f"<p>{esc(row.question)}</p><div class=\"muted\">expected evidence:</div><ul>{evidence}</ul>"
            + f"<div class=\"muted\">expected facts: {facts}</div>")


def _run_cell(row: Row) -> str:
    ans = row.answer
    ok = ans.status == "answered"
    parts = [f'<span class="status {"good" if ok else "bad"}">{esc(ans.status)}</span>'
             + (f' <span class="bad">error: {esc(row.error)}</span>' if row.error else ""),
             f"<p>{esc(ans.model_answer) or '<i>(no answer)</i>'}</p>"]
    if ans.text != ans.model_answer:
        parts.append(f'<div class="muted">shown to the user: {esc(ans.text)}</div>')
    metrics = " · ".join(f"{esc(k)} {fmt(v)}" for k, v in row.metrics.items())
    parts += [f'<div class="muted">{metrics}</div>', _retrieved(row), _citations(row)]
    parts += [f'<div class="bad">warning: {esc(w)}</div>' for w in row.warnings]
    if row.failure_reasons:
        parts.append("<div>failure reasons:</div><ul>" + "".join(f'<li class="bad">{esc(r)}</li>'
                                                                 for r in row.failure_reasons) + "</ul>")
    parts.append(_review(row))
    return "\n".join(parts)


def _retrieved(row: Row) -> str:
    evidence = [Evidence(e.source_id, e.quote) for e in row.expected.evidence]
    items = []
    for p in row.retrieved:
        ref = [Retrieved(p.rank, p.page_id, p.text)]
        relevant = any(first_rank(ref, e) is not None for e in evidence)
        items.append(f"<li>{esc(p.rank)}. {esc(p.source_id)} (page {esc(p.page)}, score {esc(p.score)})"
                     + (' <b class="good">relevant</b>' if relevant else "") + "</li>")
    return "<div>retrieved:</div><ul>" + ("".join(items) or "<li>nothing</li>") + "</ul>"


def _citations(row: Row) -> str:
    passages = [(p.source_id, p.text) for p in row.retrieved]
    items = []
    for c in row.answer.citations:
        verdict = ('<span class="good">valid</span>' if c.valid else '<span class="muted">not checked</span>'
                   if c.valid is None else f'<span class="bad">{esc(c.reason)}</span>')
        text = cited_passage(passages, c.source_id, c.quote)
        passage = (f'<div class="passage">{highlight_quote(text, c.quote)}</div>' if text is not None
                   else '<div class="muted">(passage not retrieved)</div>')
        items.append(f"<li>{esc(c.source_id)} — {verdict}<details><summary>“{esc(c.quote)}”</summary>"
                     f"{passage}</details></li>")
    return "<div>citations:</div><ul>" + ("".join(items) or "<li>none</li>") + "</ul>"


def _review(row: Row) -> str:
    if row.human_claim_review != "reviewed":
        return '<div class="muted">claim review: pending</div>'
    claims = row.claims or ()
    items = "".join(f"<li>{esc(c.verdict)}" + (f" by {esc(c.source_id)}" if c.source_id else "")
                    + f": {esc(c.claim)}" + (f' <span class="muted">({esc(c.note)})</span>' if c.note
                                            else "") + "</li>" for c in claims)
    return (f"<div>claim review: reviewed, claims supported {fmt(row.metrics.get('claims_supported'))}</div>"
            + (f"<ul>{items}</ul>" if items else '<div class="muted">no claims</div>'))
