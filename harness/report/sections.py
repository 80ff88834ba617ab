"""The report's opening sections: the failure funnel, the table of contents (by failure kind, tag and document,
with anchors to the case rows) and the per-tag and per-document breakdown of the main metrics.

Plain HTML only: links and `<details>` need no script, so the report keeps its `default-src 'none'` policy. Every
case id, tag, document name and reason goes through `esc` before it is placed in the page.

A run of any size gives a page a browser opens: each list (a contents group, the failing and the passing cases, a
breakdown table's groups) shows at most `LIST_LIMIT` items, then says "first N of M" with the `rag-eval export`
command that writes every row. A contents link whose case is not among those shown is plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..chart import fmt
from ..errors import command
from ..records import AnyRow
from ..summary import metric_summaries
from .funnel import STAGES, documents_of, funnel, kind_label, reason_kinds, stage, stage_index, stage_of
from .markup import LIST_LIMIT, attr, esc
from .report_run import ReportRun

__all__ = ["LIST_LIMIT", "CaseIndex", "index_cases", "funnel_section", "contents_section", "breakdown_section",
           "esc", "breakdown_metrics", "failing_text", "more_line"]

Key = tuple[str, int]
NO_EVIDENCE = "(no evidence: should abstain)"
NO_TAG = "(no tag)"


@dataclass(frozen=True)
class CaseIndex:
    """Every case of the report once, in display order (failing in any run first), with its anchor and, per
    run, its row (None when the run lacks it) and funnel stage."""

    keys: tuple[Key, ...]
    anchors: dict[Key, str]
    rows: dict[Key, tuple[AnyRow | None, ...]]
    stages: dict[Key, tuple[str | None, ...]]
    limit: int = LIST_LIMIT
    shown: frozenset[Key] = frozenset()  # the cases the case tables show (the first `limit` failing and passing)
    exports: tuple[str, ...] = ()  # the command that writes every row, per run
    groups: dict = field(default_factory=dict, compare=False, repr=False)  # `_by_label`'s groups, made once

    def failing(self, key: Key) -> bool:
        return any(s not in (None, "passed") for s in self.stages[key])

    def first(self, key: Key) -> AnyRow:
        return next(r for r in self.rows[key] if r is not None)


def index_cases(runs: Sequence[ReportRun], *, limit: int = LIST_LIMIT) -> CaseIndex:
    """Failing cases first, ordered by the stage they are lost at in the last run (the run under study), then in
    the earlier one; passing cases after, each group in case order. Lists show at most `limit` items."""
    by_key = [{r.key: r for r in run.rows} for run in runs]
    keys = list(dict.fromkeys(k for rows in by_key for k in rows))
    rows = {k: tuple(rows.get(k) for rows in by_key) for k in keys}
    stages = {k: tuple(None if r is None else stage_of(r) for r in rows[k]) for k in keys}
    last = len(STAGES)

    def order(key: Key) -> tuple[int, ...]:
        return tuple(last if s is None else stage_index(s) for s in reversed(stages[key]))

    keys.sort(key=order)  # stable: case order within a stage
    failing = [k for k in keys if any(s not in (None, "passed") for s in stages[k])]
    passing = [k for k in keys if not any(s not in (None, "passed") for s in stages[k])]
    exports = tuple(command("export", run.path, "--csv", "rows.csv") for run in runs)
    return CaseIndex(tuple(keys), _anchors(keys), rows, stages, limit,
                     frozenset(failing[:limit]) | frozenset(passing[:limit]), exports)


def more_line(index: CaseIndex, shown: int, total: int, what: str) -> str:
    """Past the limit: "first N of M" and the command that writes every row (empty when all are shown)."""
    if total <= shown:
        return ""
    commands = " · ".join(f"<code>{esc(c)}</code>" for c in index.exports)
    return f'<p class="muted">first {shown:,} of {total:,} {esc(what)}; every case: {commands}</p>'



def _anchors(keys: Sequence[Key]) -> dict[Key, str]:
    """An id per case usable in a URL fragment; a counter keeps two ids that differ only in odd characters apart."""
    out: dict[Key, str] = {}
    used: set[str] = set()
    for case_id, repeat in keys:
        base = "case-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", case_id) + (f"-r{repeat}" if repeat else "")
        anchor, n = base, 1
        while anchor in used:
            n += 1
            anchor = f"{base}-{n}"
        used.add(anchor)
        out[(case_id, repeat)] = anchor
    return out


def funnel_section(runs: Sequence[ReportRun]) -> str:
    """A table: one line per stage with each run's count, share and bar, and the stage's definition."""
    counts = [funnel(run.rows) for run in runs]
    totals = [len(run.rows) for run in runs]
    head = "".join(f"<th>{label}: {esc(run.name)}</th>" for label, run in zip("AB", runs))
    out = ['<section id="funnel" class="funnel"><h2>Where cases were lost</h2>',
           '<p class="muted">Per run: each case counts once, at the first stage it fails, in the order below; '
           'the stages read the failure reasons and statuses stored on each row.</p>',
           f"<table><tr><th>stage</th>{head}<th>definition</th></tr>"]
    for st in STAGES:
        if st.key == "other" and not any(c["other"] for c in counts):
            continue
        cells = "".join(_funnel_cell(c[st.key], total, st.key) for c, total in zip(counts, totals))
        out.append(f'<tr class="stage-{st.key}"><td><b>{esc(st.label)}</b></td>{cells}'
                   f'<td class="muted">{esc(st.definition)}</td></tr>')
    out.append("</table></section>")
    return "\n".join(out)


def _funnel_cell(count: int, total: int, key: str) -> str:
    share = count / total if total else 0.0
    colour = "good" if key == "passed" else "bad"
    return (f'<td class="num">{count} <span class="muted">({share:.0%})</span>'
            f'<div class="track"><div class="fill {colour}" style="width:{share * 100:.1f}%"></div></div></td>')


def failing_text(index: CaseIndex, n_runs: int) -> str:
    """How many cases fail, and in which run: `29` for one run, `29: failing in A or B (A 27, B 28)` for two."""
    failing = [k for k in index.keys if index.failing(k)]
    if n_runs == 1:
        return str(len(failing))
    return f"{len(failing)}: failing in A or B ({_per_run(index, failing, n_runs, _fails)})"


def contents_section(runs: Sequence[ReportRun], index: CaseIndex) -> str:
    """Links to every case grouped by failure kind, by tag and by document; each group folds open. Every count
    says what it counts: per run, labelled A and B, as in the funnel, and `in A or B` for a union of cases."""
    n = len(runs)
    failing = sum(1 for k in index.keys if index.failing(k))
    out = ['<nav id="contents"><h2>Contents</h2><p>',
           f'<a href="#failing">failing cases ({failing_text(index, n)})</a> · <a href="#passing">passing cases '
           f'({len(index.keys) - failing}{" passing in both" if n > 1 else ""})</a> · <a href="#funnel">funnel</a> · '
           '<a href="#breakdown">breakdown by tag and document</a> · <a href="#summary">summary</a> · '
           '<a href="#charts">charts</a></p>']
    out.append(_groups("By where it was lost", _by_stage(index), index, n, lost=True))
    out.append(_groups("By failure kind", _by_kind(runs, index), index, n, union=True))
    out.append(_groups("By tag", _by_label(index, _tags), index, n))
    out.append(_groups("By document", _by_label(index, _documents), index, n))
    out.append("</nav>")
    return "\n".join(out)


def _by_stage(index: CaseIndex) -> dict[str, list[Key]]:
    """Funnel stage label -> cases lost there in any run, in funnel order (passing cases left out)."""
    out: dict[str, list[Key]] = {s.label: [] for s in STAGES if s.key != "passed"}
    for key in index.keys:
        for found in dict.fromkeys(s for s in index.stages[key] if s not in (None, "passed")):
            out[stage(found).label].append(key)
    return {label: keys for label, keys in out.items() if keys}


def _by_kind(runs: Sequence[ReportRun], index: CaseIndex) -> dict[str, list[Key]]:
    """Kind label -> cases that have a reason of that kind in any run."""
    out: dict[str, dict[Key, None]] = {}
    for run in runs:
        for key, positions in reason_kinds(run.rows).items():
            found = out.setdefault(kind_label(key), {})
            found.update((run.rows[i].key, None) for i in positions)
    order = {k: i for i, k in enumerate(index.keys)}
    return {label: sorted(keys, key=order.__getitem__) for label, keys in out.items()}


def _tags(row: AnyRow) -> Sequence[str]:
    return row.tags or (NO_TAG,)


def _documents(row: AnyRow) -> Sequence[str]:
    return documents_of(row) or (NO_EVIDENCE,)


def _by_label(index: CaseIndex, labels: Callable[[AnyRow], Sequence[str]]) -> dict[str, list[Key]]:
    """Label -> its cases in index order, for the contents and the breakdown alike (made once per index)."""
    found = index.groups.get(labels)
    if found is None:
        found = index.groups[labels] = _grouped(index, labels)
    return found


def _grouped(index: CaseIndex, labels: Callable[[AnyRow], Sequence[str]]) -> dict[str, list[Key]]:
    out: dict[str, list[Key]] = {}
    for key in index.keys:
        for label in labels(index.first(key)):
            out.setdefault(label, []).append(key)
    return dict(sorted(out.items()))


def _fails(index: CaseIndex, key: Key, run: int) -> bool:
    return index.stages[key][run] not in (None, "passed")


def _per_run(index: CaseIndex, keys: Sequence[Key], n_runs: int, counted: Callable[[CaseIndex, Key, int], bool]
             ) -> str:
    """`A 18, B 20`: how many of `keys` each run counts."""
    return ", ".join(f"{label} {sum(1 for k in keys if counted(index, k, i))}" for label, i in zip("AB", range(n_runs)))


def _summary(label: str, keys: Sequence[Key], index: CaseIndex, n_runs: int, *, lost: bool, union: bool) -> str:
    """What a group counts. A funnel stage: the cases each run loses there (the funnel's numbers), then the union
    when there are two runs; otherwise the cases in the group and how many of them fail in each run."""
    if lost:
        stage_key = next(s.key for s in STAGES if s.label == label)
        if n_runs == 1:
            return f"{label}: {len(keys)} cases"
        at = _per_run(index, keys, n_runs, lambda ix, k, i: ix.stages[k][i] == stage_key)
        return f"{label}: {at} ({len(keys)} cases lost there in A or B)"
    if n_runs == 1:
        return f"{label}: {len(keys)} cases, {sum(1 for k in keys if _fails(index, k, 0))} failing"
    where = " with it in A or B" if union else ""
    return f"{label}: {len(keys)} cases{where}; failing: {_per_run(index, keys, n_runs, _fails)}"


def _groups(title: str, groups: dict[str, list[Key]], index: CaseIndex, n_runs: int, *, lost: bool = False,
            union: bool = False) -> str:
    items = []
    for label, keys in groups.items():
        links = " ".join(_link(index, k, n_runs) for k in keys[:index.limit])
        summary = _summary(label, keys, index, n_runs, lost=lost, union=union)
        items.append(f"<li><details><summary>{esc(summary)}</summary><p>{links}</p>"
                     f"{more_line(index, index.limit, len(keys), 'cases of this group')}</details></li>")
    return f"<h3>{esc(title)}</h3><ul class=\"toc\">" + ("".join(items) or "<li>none</li>") + "</ul>"


def _link(index: CaseIndex, key: Key, n_runs: int) -> str:
    case_id, repeat = key
    stages = index.stages[key]
    mark = "bad" if index.failing(key) else "good"
    where = " / ".join("—" if s is None else s for s in stages)
    name = esc(case_id) + (f" (repeat {repeat})" if repeat else "")
    link = (f'<a class="{mark}" href="#{attr(index.anchors[key])}">{name}</a>' if key in index.shown
            else f'<span class="{mark}">{name}</span>')  # not among the cases shown: no link to nowhere
    return f"{link} <span class=\"muted\">[{esc(where)}]</span>"


def breakdown_metrics(metrics: Sequence[str]) -> list[str]:
    """`passed`, hit at the smallest k, recall at the largest k, facts, behaviour and quote_valid: those the run
    has."""
    ks = sorted(int(m.split("@")[1]) for m in metrics if m.startswith("hit@"))
    wanted = ["passed", *([f"hit@{ks[0]}", f"recall@{ks[-1]}"] if ks else []), "facts", "behaviour", "quote_valid"]
    return [m for m in wanted if m in metrics]


def breakdown_section(runs: Sequence[ReportRun], index: CaseIndex) -> str:
    """Per tag and per document: case count, failing count, and each main metric's mean with its scored count."""
    metrics = breakdown_metrics(runs[-1].manifest.metrics)
    parts = ['<section id="breakdown"><h2>Breakdown by tag and document</h2>',
             '<p class="muted">Each cell: the mean over the cases where the metric applies, and that count in '
             "brackets" + ("; A → B" if len(runs) > 1 else "") + ". Errored rows are left out of the means.</p>"]
    for title, labels in (("By tag", _tags), ("By document (of the expected evidence)", _documents)):
        parts.append(_breakdown_table(title, _by_label(index, labels), index, metrics, len(runs)))
    return "\n".join(parts) + "</section>"


def _breakdown_table(title: str, groups: dict[str, list[Key]], index: CaseIndex, metrics: Sequence[str],
                     n_runs: int) -> str:
    head = "".join(f"<th>{esc(m)}</th>" for m in metrics)
    out = [f"<h3>{esc(title)}</h3><table><tr><th>group</th><th>cases</th><th>failing</th>{head}</tr>"]
    for label, keys in list(groups.items())[:index.limit]:
        per_run = []
        for i in range(n_runs):
            rows = [r for k in keys if (r := index.rows[k][i]) is not None]
            failing_here = sum(1 for k in keys if index.stages[k][i] not in (None, "passed"))
            per_run.append((failing_here, metric_summaries(rows, metrics)))
        failing = " → ".join(str(count) for count, _ in per_run)
        cells = "".join('<td class="num">' + " → ".join(
            f"{fmt(s[m].mean)} <span class=\"muted\">({s[m].scored})</span>" for _, s in per_run) + "</td>"
            for m in metrics)
        out.append(f'<tr><td>{esc(label)}</td><td class="num">{len(keys)}</td><td class="num">{failing}</td>'
                   f"{cells}</tr>")
    return "".join(out) + "</table>" + more_line(index, index.limit, len(groups), "groups")
