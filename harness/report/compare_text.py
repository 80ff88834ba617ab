"""The text and Markdown of `rag-eval compare`: the per-metric table, how each p was computed, the minimum
detectable differences, flipped cases (wrapped and capped), reviewer disagreements and the manifest diff."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..chart import floor_text, p_text
from ..judged.standing import MIN_PER_VERDICT, MIN_RECALL, judge_note
from ..metrics.registry import JUDGED_METRICS, TWIN_NOTE, shown_once
from ..stats.mde import NOT_DETECTABLE
from ..stats.paired import EXACT, EXACT_BINOMIAL, MONTE_CARLO, P_FLOOR, TANGO
from ..stats.signs import MAX_ENUMERATED
from .compare import Comparison, MetricComparison
from .settings_diff import NOT_SETUP

__all__ = ["FLIPS_SHOWN", "capped", "p_shown", "render_markdown", "render_table"]

FLIPS_SHOWN = 20  # case ids listed per metric and direction before "and N more (see --json)"
_WIDTH = 100


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _mde(m: MetricComparison) -> str:
    return "n/d" if m.mde_status == NOT_DETECTABLE else _num(m.mde)


def _ci(m: MetricComparison) -> str:
    return "n/a" if m.ci_low is None else f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]"


def _p(m: MetricComparison, resamples: int) -> str:
    """The p to four decimals; a Monte-Carlo p at its floor as `< 1e-4` (at 10,000 resamples), an exact p too small
    for a float as `< 1e-300`: never 0."""
    return p_shown(m.p_value, floor_of=resamples if m.p_at_floor(resamples) else None)


def p_shown(p: float | None, *, floor_of: int | None = None) -> str:
    """`harness.chart.p_text`, with an exact p at `P_FLOOR` (or below) as `< 1e-300`."""
    if p is not None and p <= P_FLOOR:
        return f"< {P_FLOOR:.0e}"
    return p_text(p, floor_of=floor_of)


def _wtl(m: MetricComparison) -> str:
    """win/tie/loss as one field: digits with thousands commas, no spaces."""
    return f"{m.wins:,}/{m.ties:,}/{m.losses:,}"


def _value(value: Any) -> str:
    return "(absent)" if value is None else json.dumps(value, ensure_ascii=False) if not isinstance(value, str) \
        else value


_P_METHODS = ((EXACT_BINOMIAL, "exact binomial"), (EXACT, "exact"), (MONTE_CARLO, "Monte-Carlo"))


def _p_method(c: Comparison) -> str:
    """How each metric's sign-flip p was computed: it depends on how many of its cases differ, and by how much."""
    rule = (f"sign-flip p over the cases that differ (ties count for nothing): exact binomial when they all differ "
            f"by the same amount (0/1 metrics), exact over every sign vector when {MAX_ENUMERATED} or fewer differ, "
            f"Monte-Carlo ({c.resamples} resamples; `{floor_text(c.resamples)}` at its floor) "
            "above")
    groups = [(label, [name for m, name in _rows(c) if m.p_method == key]) for key, label in _P_METHODS]
    used = [(label, names) for label, names in groups if names]
    if len(used) == 1:
        return f"{rule}; here all {used[0][0]}"
    return f"{rule}; here " + "; ".join(f"{label} for {', '.join(names)}" for label, names in used)


def _ci_method(c: Comparison) -> str:
    """Which metrics' interval is Tango's and which the scaled one."""
    tango = [name for m, name in _rows(c) if m.ci_method == TANGO]
    rule = ("interval: a score interval that lets the number of differing cases vary (its far end can pass the "
            "observed delta), Tango's for 0/1 metrics, the same in units of the differing cases' size for the "
            "others; computed, not drawn")
    if not tango:
        return f"{rule}; here all scaled"
    return f"{rule}; here Tango for {', '.join(tango)}" + ("" if len(tango) == len(_rows(c)) else
                                                           ", scaled for the others")


def _header(c: Comparison) -> list[str]:
    scope = f"cases tagged {c.tag!r}" if c.tag else "all shared cases"
    lines = [f"A: {c.run_a}", f"B: {c.run_b}",
             f"compared: {c.cases} cases ({scope}); B - A; {c.confidence:.0%} interval and sign-flip randomisation p, "
             f"{c.resamples} resamples, seed {c.seed}", _p_method(c), _ci_method(c)]
    if c.primary:
        lines.append(f"primary metric: {c.primary}. The p-values are per metric and not corrected across the "
                     f"{len(c.metrics)} metrics: decide on {c.primary}; read the others as diagnostics")
    else:
        lines.append(f"the p-values are per metric and not corrected across the {len(c.metrics)} metrics")
    errored = c.errored or {"a": 0, "b": 0}
    rule = f"each counts 0 on {c.primary} and is left out of the other metrics" if c.primary \
        else "each is left out of every metric"
    lines.append(f"errored cases: A {errored['a']}, B {errored['b']} ({rule})")
    if c.only_in_a or c.only_in_b:
        lines.append(f"left out: {len(c.only_in_a)} cases only in A, {len(c.only_in_b)} only in B (--shared-only)")
    ra, rb = c.review["a"], c.review["b"]
    lines.append(f"human claim review: A {ra['reviewed']} reviewed, {ra['pending']} pending; "
                 f"B {rb['reviewed']} reviewed, {rb['pending']} pending (a pending claim counts in no claim "
                 "metric; until it is reviewed, `passed` covers the automatic checks only)")
    return lines + _judged_passed_lines(c)


def _judged_passed_lines(c: Comparison) -> list[str]:
    """Whose `passed` this is: the judge's in both runs (--judged-passed, each judge's standing), or the people's
    in both, also in a run that recorded --judged-passed."""
    standings = c.judge.get("judged_passed")
    if standings:
        a, b = standings["a"], standings["b"]
        return [f"--judged-passed: `passed` reads claim_support_judged in A and B (floor: kappa's analytic lower "
                f"bound >= {a['min_kappa']:g} over >= {a['min_shared']} shared claims, people's supported and "
                f"unsupported >= {MIN_PER_VERDICT} each, the judge's recall of each >= {MIN_RECALL:g} at its Wilson "
                f"lower bound); A: {a['text']}; B: {b['text']}"]
    recorded = c.judge.get("people_passed")
    if recorded:
        runs = " and ".join(side.upper() for side in recorded)
        return [f"{runs} recorded --judged-passed; compare reads the people's `passed` in both runs "
                "(--judged-passed reads the judge's in both)"]
    return []


def _judge_lines(c: Comparison, name: str) -> list[str]:
    """Beside a judged metric: each run's judge agreement with people, or what is missing."""
    if name not in JUDGED_METRICS:
        return []
    return [f"    A: {judge_note(c.judge.get('a'))}", f"    B: {judge_note(c.judge.get('b'))}"]


def _mde_notes(c: Comparison) -> list[str]:
    lines = ["MDE: the smallest true difference these cases would detect (80% power, two-sided alpha 0.05) with the "
             "test compare runs. Two models, because the test differs: for 0/1 metrics the exact sign test depends "
             "on the wins among the differing cases alone, so the power is exact with the number of differing cases "
             "itself random (the observed share of them); for the others the test depends on the sizes of the "
             "differing cases, so those cases are held fixed and each goes either way (exact up to "
             f"{MAX_ENUMERATED} of them, simulated with seed {c.seed} above). Held fixed, the power is what these "
             "cases give; over new cases it is lower when few differ (docs/daily-compare.md). Never above the largest "
             "difference the cases allow (all that differ going one way); a smaller delta needs more cases "
             "(`rag-eval draft`)."]
    blind = [(m, name) for m, name in _rows(c) if m.mde_status == NOT_DETECTABLE]
    if blind:
        few = ", ".join(f"{name} ({m.differing} differ)" for m, name in blind)
        lines.append(f"n/d: not detectable with these cases: {few}. Even if every case that differs went one way "
                     "the test would have less than 80% power; with 5 or fewer differing cases no p can reach 0.05 "
                     "(the smallest is 2 / 2**D). Add cases.")
    return lines


_COLUMNS = ("n", "A", "B", "delta", "95% CI", "p", "W/T/L", "MDE")
_LEFT = {"95% CI"}  # the others are right-aligned


def _cells(m: MetricComparison, resamples: int) -> list[str]:
    return [f"{m.n:,}", _num(m.mean_a), _num(m.mean_b), _num(m.delta, True), _ci(m), _p(m, resamples), _wtl(m),
            _mde(m)]


def _table_lines(c: Comparison, shown: list[tuple[MetricComparison, str]]) -> list[tuple[str, MetricComparison | None]]:
    """The header and one line per metric, each column as wide as its widest cell, two spaces between."""
    rows = [["metric", *_COLUMNS]] + [[label, *_cells(m, c.resamples)] for m, label in shown]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

    def line(row: list[str]) -> str:
        return "  ".join(cell.ljust(w) if i == 0 or rows[0][i] in _LEFT else cell.rjust(w)
                         for i, (cell, w) in enumerate(zip(row, widths))).rstrip()

    return [(line(rows[0]), None)] + [(line(row), m) for row, (m, _) in zip(rows[1:], shown)]


def render_table(c: Comparison) -> str:
    """The terminal view: header, metric table, flips per metric, manifest diff."""
    shown = _shown(c)
    lines = _header(c) + [""]
    for text, m in _table_lines(c, shown):
        lines.append(text)
        lines += _judge_lines(c, m.metric) if m is not None else []
    if c.primary:
        lines.append("* primary metric")
    if any(m.metric != label.removesuffix(" *") for m, label in shown):
        lines.append(TWIN_NOTE)
    lines += _mde_notes(c)
    one_sided = [f"{m.metric} {m.unpaired}" for m in c.metrics if m.unpaired]
    if one_sided:
        lines.append(f"(n counts cases where the metric applies in both runs; in one run only: {', '.join(one_sided)})")
    if c.metrics_not_shared:
        lines.append(f"(not in both runs: {', '.join(c.metrics_not_shared)})")
    lines += _disagreements(c)
    lines += ["", "flips (fixed = better in B, broke = worse in B):"]
    flips = [(m, name) for m, name in _rows(c) if m.fixed or m.broke]
    for m, name in flips:
        lines += _flip_lines(m, name)
    if not flips:
        lines.append("  none")
    lines += ["", "what differs between the manifests (A -> B):"]
    lines += _diff_lines(c) or [f"  nothing besides {NOT_SETUP}"]
    return "\n".join(lines)


def capped(ids: Sequence[str], limit: int = FLIPS_SHOWN) -> str:
    """Case ids joined by commas, the first `limit` of them, then "and N more (see --json)"."""
    if not ids:
        return "-"
    shown = ", ".join(ids[:limit])
    return shown + (f", and {len(ids) - limit} more (see --json)" if len(ids) > limit else "")


def _flip_lines(m: MetricComparison, name: str) -> list[str]:
    out = [f"  {name}:"]
    for what, ids in (("fixed", m.fixed), ("broke", m.broke)):
        out += textwrap.wrap(f"{what} ({len(ids)}): {capped(ids)}", _WIDTH, initial_indent="    ",
                             subsequent_indent="      ", break_on_hyphens=False)
    return out


def _disagreements(c: Comparison) -> list[str]:
    """Each metric's notes (`MetricComparison.notes`, as --json carries them), one line each."""
    return [f"note: {name}: {note}" for m, name in _rows(c) for note in m.notes]


def _diff_lines(c: Comparison) -> list[str]:
    settings = [d for d in c.manifest_diff if not d[0].startswith("code.")]
    code = [d for d in c.manifest_diff if d[0].startswith("code.")]
    width = max((len(k) for k, _, _ in c.manifest_diff), default=0)
    lines = [f"  {k:<{width}}  {_value(a)} -> {_value(b)}" for k, a, b in settings]
    if code:
        lines.append("  code:")
        lines += [f"  {k:<{width}}  {_value(a)} -> {_value(b)}" for k, a, b in code]
    return lines


def _rows(c: Comparison) -> list[tuple[MetricComparison, str]]:
    """Each metric row once, labelled as the table shows it (twins that agree as one: `_shown`)."""
    return _shown(c, primary="")


def _shown(c: Comparison, primary: str = " *") -> list[tuple[MetricComparison, str]]:
    """The metric rows: a metric and its registry twin (`harness.metrics.registry.shown_once`) share a row when every
    figure agrees; the primary metric's label ends with `primary`."""
    by_name = {m.metric: m for m in c.metrics}
    same = lambda x, y: replace(by_name[x], metric="") == replace(by_name[y], metric="")  # noqa: E731
    return [(by_name[name], label + (primary if name == c.primary else ""))
            for name, label in shown_once(list(by_name), same)]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(c: Comparison) -> str:
    """The same content as Markdown: a metric table, a flips table, a manifest-diff table."""
    lines = [f"**A:** `{c.run_a}`  ", f"**B:** `{c.run_b}`  ", "  \n".join(_header(c)[2:]), "",
             "| metric | n | A | B | delta | 95% CI | p | W/T/L | MDE |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for m, label in _shown(c, primary=" (primary)"):
        name = f"**{label.removesuffix(' (primary)')}** (primary)" if m.metric == c.primary else label
        lines.append(f"| {_md(name)} | {m.n} | {_num(m.mean_a)} | {_num(m.mean_b)} | {_num(m.delta, True)} | "
                     f"{_ci(m)} | {_p(m, c.resamples)} | {_wtl(m)} | {_mde(m)} |")
    if any(m.metric in JUDGED_METRICS for m in c.metrics):
        lines += ["", *(f"judged metrics, {s.upper()}: {_md(judge_note(c.judge.get(s)))}  " for s in ("a", "b"))]
    lines += ["", *_mde_notes(c), *_disagreements(c)]
    lines += ["", "| metric | fixed (better in B) | broke (worse in B) |", "|---|---|---|"]
    for m, name in _rows(c):
        if m.fixed or m.broke:
            lines.append(f"| {_md(name)} | {_md(capped(m.fixed))} | {_md(capped(m.broke))} |")
    lines += ["", "| manifest key | A | B |", "|---|---|---|"]
    lines += [f"| {_md(k)} | {_md(_value(a))} | {_md(_value(b))} |" for k, a, b in c.manifest_diff]
    return "\n".join(lines)
