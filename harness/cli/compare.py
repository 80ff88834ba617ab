"""`rag-eval compare RUN_A RUN_B`: paired per-metric statistics, flipped cases, and what differs in the manifests."""

from __future__ import annotations

import argparse
import json
from typing import Any

from chatbot.terminal import say

from ..stats.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, Comparison, MetricComparison, compare_runs


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two runs case by case (bootstrap CI, randomisation test, flips)",
                       description="Compare run B with run A over the same cases: per metric the paired means, "
                                   "delta (B - A), a paired bootstrap 95% interval, a paired sign-flip "
                                   "randomisation p-value, win/tie/loss counts for B, the cases that flipped, "
                                   "and what differs between the two manifests.")
    p.add_argument("run_a", metavar="RUN_A", help="baseline run directory")
    p.add_argument("run_b", metavar="RUN_B", help="run directory compared with it")
    p.add_argument("--shared-only", action="store_true",
                   help="when the runs cover different cases, compare the shared ones instead of refusing")
    p.add_argument("--tag", metavar="NAME", help="only cases carrying this tag (e.g. confirm on heldout)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                   help=f"bootstrap and randomisation resamples (default {DEFAULT_RESAMPLES})")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print everything as one JSON object")
    fmt.add_argument("--markdown", action="store_true", help="print Markdown tables")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = compare_runs(args.run_a, args.run_b, shared_only=args.shared_only, tag=args.tag, seed=args.seed,
                          resamples=args.resamples)
    if args.json:
        say(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    elif args.markdown:
        say(render_markdown(result))
    else:
        say(render_table(result))
    return 0


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _ci(m: MetricComparison) -> str:
    return "n/a" if m.ci_low is None else f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]"


def _p(m: MetricComparison) -> str:
    return "n/a" if m.p_value is None else f"{m.p_value:.3f}"


def _value(value: Any) -> str:
    return "(absent)" if value is None else json.dumps(value, ensure_ascii=False) if not isinstance(value, str) \
        else value


def _header(c: Comparison) -> list[str]:
    scope = f"cases tagged {c.tag!r}" if c.tag else "all shared cases"
    lines = [f"A: {c.run_a}", f"B: {c.run_b}",
             f"compared: {c.cases} cases ({scope}); B - A; {c.confidence:.0%} paired bootstrap interval over cases "
             f"and sign-flip randomisation p, {c.resamples} resamples, seed {c.seed}"]
    if c.only_in_a or c.only_in_b:
        lines.append(f"left out: {len(c.only_in_a)} cases only in A, {len(c.only_in_b)} only in B (--shared-only)")
    ra, rb = c.review["a"], c.review["b"]
    lines.append(f"human claim review: A {ra['reviewed']} reviewed, {ra['pending']} pending; "
                 f"B {rb['reviewed']} reviewed, {rb['pending']} pending (a pending claim counts in no claim "
                 "metric; until it is reviewed, `passed` covers the automatic checks only)")
    return lines


def render_table(c: Comparison) -> str:
    """The terminal view: header, metric table, flips per metric, manifest diff."""
    lines = _header(c) + ["", f"{'metric':<20}{'n':>4}{'A':>8}{'B':>8}{'delta':>8}  {'95% CI':<18}{'p':>7}"
                              f"{'W/T/L':>10}{'MDE':>8}"]
    for m in c.metrics:
        lines.append(f"{m.metric:<20}{m.n:>4}{_num(m.mean_a):>8}{_num(m.mean_b):>8}{_num(m.delta, True):>8}  "
                     f"{_ci(m):<18}{_p(m):>7}{f'{m.wins}/{m.ties}/{m.losses}':>10}{_num(m.mde):>8}")
    lines.append("MDE: the smallest true difference these cases would detect (80% power, two-sided alpha 0.05, "
                 "from the observed spread); a smaller delta needs more cases (`rag-eval draft`).")
    one_sided = [f"{m.metric} {m.unpaired}" for m in c.metrics if m.unpaired]
    if one_sided:
        lines.append(f"(n counts cases where the metric applies in both runs; in one run only: {', '.join(one_sided)})")
    if c.metrics_not_shared:
        lines.append(f"(not in both runs: {', '.join(c.metrics_not_shared)})")
    lines += _disagreements(c)
    lines += ["", "flips (fixed = better in B, broke = worse in B):"]
    flips = [(m.metric, m.fixed, m.broke) for m in c.metrics if m.fixed or m.broke]
    for name, fixed, broke in flips:
        lines.append(f"  {name}: fixed {', '.join(fixed) or '-'}; broke {', '.join(broke) or '-'}")
    if not flips:
        lines.append("  none")
    lines += ["", "what differs between the manifests (A -> B):"]
    lines += _diff_lines(c) or ["  nothing besides run ids, times and labels"]
    return "\n".join(lines)


def _disagreements(c: Comparison) -> list[str]:
    """Metrics whose interval excludes 0 while p > 0.05: say why, so nobody reads them as a clear result."""
    odd = [m for m in c.metrics if m.ci_low is not None and m.ci_high is not None and m.p_value is not None
           and (m.ci_low > 0 or m.ci_high < 0) and m.p_value > 0.05]
    if not odd:
        return []
    names = ", ".join(f"{m.metric} (p {m.p_value:.3f})" for m in odd)
    return [f"note: for {names} the interval excludes 0 but p > 0.05. With few cases the percentile bootstrap "
            "interval is too narrow, while the sign-flip p is exact; read these as not yet shown, and add cases."]


def _diff_lines(c: Comparison) -> list[str]:
    settings = [d for d in c.manifest_diff if not d[0].startswith("code.")]
    code = [d for d in c.manifest_diff if d[0].startswith("code.")]
    width = max((len(k) for k, _, _ in c.manifest_diff), default=0)
    lines = [f"  {k:<{width}}  {_value(a)} -> {_value(b)}" for k, a, b in settings]
    if code:
        lines.append("  code:")
        lines += [f"  {k:<{width}}  {_value(a)} -> {_value(b)}" for k, a, b in code]
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(c: Comparison) -> str:
    """The same content as Markdown: a metric table, a flips table, a manifest-diff table."""
    lines = [f"**A:** `{c.run_a}`  ", f"**B:** `{c.run_b}`  ", "  \n".join(_header(c)[2:]), "",
             "| metric | n | A | B | delta | 95% CI | p | W/T/L | MDE |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for m in c.metrics:
        lines.append(f"| {m.metric} | {m.n} | {_num(m.mean_a)} | {_num(m.mean_b)} | {_num(m.delta, True)} | "
                     f"{_ci(m)} | {_p(m)} | {m.wins}/{m.ties}/{m.losses} | {_num(m.mde)} |")
    lines += _disagreements(c)
    lines += ["", "| metric | fixed (better in B) | broke (worse in B) |", "|---|---|---|"]
    for m in c.metrics:
        if m.fixed or m.broke:
            lines.append(f"| {m.metric} | {_md(', '.join(m.fixed)) or '-'} | {_md(', '.join(m.broke)) or '-'} |")
    lines += ["", "| manifest key | A | B |", "|---|---|---|"]
    lines += [f"| {_md(k)} | {_md(_value(a))} | {_md(_value(b))} |" for k, a, b in c.manifest_diff]
    return "\n".join(lines)
