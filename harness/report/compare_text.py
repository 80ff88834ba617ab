"""The text and Markdown of `rag-eval compare`: the per-metric table, how each p was computed, the minimum
detectable differences, flipped cases (wrapped and capped), reviewer disagreements and the manifest diff."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..chart import floor_text, p_text
from ..judged import judge_note
from ..metrics import JUDGED_METRICS, TWIN_NOTE, shown_once
from ..stats.mde import NOT_DETECTABLE
from ..stats.paired import EXACT, EXACT_BINOMIAL, INVERTED, MONTE_CARLO
from ..stats.signs import MAX_ENUMERATED
from .compare import Comparison, MetricComparison
from .settings_diff import NOT_SETUP

__all__ = ["FLIPS_SHOWN", "capped", "render_markdown", "render_table"]

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
    """The p to four decimals; a Monte-Carlo p at its floor as `< 1e-4` (at 10,000 resamples), never 0."""
    return p_text(m.p_value, floor_of=resamples if m.p_at_floor(resamples) else None)


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
    """Which metrics' interval inverts the exact test and which is the bootstrap."""
    inverted = [name for m, name in _rows(c) if m.ci_method == INVERTED]
    rule = (f"interval: the inverted sign-flip test when {MAX_ENUMERATED} or fewer cases differ (it excludes 0 "
            "exactly when p <= 0.05), the paired bootstrap over cases above")
    if not inverted:
        return f"{rule}; here all bootstrap"
    return f"{rule}; here inverted for {', '.join(inverted)}" + ("" if len(inverted) == len(_rows(c)) else
                                                                 ", bootstrap for the others")


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
        return [f"--judged-passed: `passed` reads claim_support_judged in A and B (floor: kappa's lower bound >= "
                f"{a['min_kappa']:g} over >= {a['min_shared']} shared claims); A: {a['text']}; B: {b['text']}"]
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
             "test compare runs: for 0/1 metrics the exact sign test at the observed share of differing cases; for "
             "the others the sign-flip test with the differing cases keeping their sizes, each going either way "
             f"(exact up to {MAX_ENUMERATED} of them, simulated with seed {c.seed} above). Never above the largest "
             "difference the cases allow (all that differ going one way); a smaller delta needs more cases "
             "(`rag-eval draft`)."]
    blind = [(m, name) for m, name in _rows(c) if m.mde_status == NOT_DETECTABLE]
    if blind:
        few = ", ".join(f"{name} ({m.differing} differ)" for m, name in blind)
        lines.append(f"n/d: not detectable with these cases: {few}. Even if every case that differs went one way "
                     "the test would have less than 80% power; with 5 or fewer differing cases no p can reach 0.05 "
                     "(the smallest is 2 / 2**D). Add cases.")
    return lines


def render_table(c: Comparison) -> str:
    """The terminal view: header, metric table, flips per metric, manifest diff."""
    shown = _shown(c)
    width = max([len("metric"), *(len(label) for _, label in shown)]) + 1
    lines = _header(c) + ["", f"{'metric':<{width}}{'n':>4}{'A':>8}{'B':>8}{'delta':>8}  {'95% CI':<18}{'p':>7}"
                              f"{'W/T/L':>10}{'MDE':>8}"]
    for m, label in shown:
        lines.append(f"{label:<{width}}{m.n:>4}{_num(m.mean_a):>8}{_num(m.mean_b):>8}{_num(m.delta, True):>8}  "
                     f"{_ci(m):<18}{_p(m, c.resamples):>7}{f'{m.wins}/{m.ties}/{m.losses}':>10}{_mde(m):>8}")
        lines += _judge_lines(c, m.metric)
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
    """Metrics whose interval excludes 0 while p > 0.05: say why, so nobody reads them as a clear result."""
    odd = [m for m in c.metrics if m.ci_low is not None and m.ci_high is not None and m.p_value is not None
           and (m.ci_low > 0 or m.ci_high < 0) and m.p_value > 0.05]
    if not odd:
        return []
    names = ", ".join(f"{m.metric} (p {_p(m, c.resamples)}, {m.p_method}, {m.differing} cases differ)" for m in odd)
    return [f"note: for {names} the bootstrap interval excludes 0 but p > 0.05. Near 0.05 the percentile "
            "bootstrap is a little too narrow, while the sign-flip p holds its level; read these as not yet shown, "
            "and add cases."]


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
    """The metric rows: a metric and its registry twin (`harness.metrics.shown_once`) share a row when every figure
    agrees; the primary metric's label ends with `primary`."""
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
                     f"{_ci(m)} | {_p(m, c.resamples)} | {m.wins}/{m.ties}/{m.losses} | {_mde(m)} |")
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
