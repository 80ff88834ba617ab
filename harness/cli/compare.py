"""`rag-eval compare RUN_A RUN_B`: paired per-metric statistics, flipped cases, and what differs in the manifests."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pdfrag.terminal import say

from ..errors import EXIT_JUDGE_REFUSED, InputError
from ..stats.defaults import DEFAULT_MIN_JUDGE_KAPPA, DEFAULT_PRIMARY, DEFAULT_RESAMPLES, DEFAULT_SEED, GATE_ALPHA
from .flags import EXIT_WORSE

if TYPE_CHECKING:
    from ..report.compare import Comparison, MetricComparison


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two runs case by case (score interval, randomisation test, flips)",
                       description="Compare run B with run A over the same cases: per metric the paired means, "
                                   "delta (B - A), a 95% score interval, a paired sign-flip "
                                   "randomisation p-value, win/tie/loss counts for B, the cases that flipped, "
                                   "and what differs between the two manifests. A run may be named by its label "
                                   f"(the latest run with it in --out). Exit {EXIT_WORSE} with --fail-if-worse "
                                   "when B is significantly worse (docs/daily-compare.md).")
    p.add_argument("run_a", metavar="RUN_A", help="baseline run: a directory, or a label (its latest run in --out)")
    p.add_argument("run_b", metavar="RUN_B", help="run compared with it: a directory or a label")
    p.add_argument("--out", default="results", help="where to look for runs given by label (default results)")
    p.add_argument("--primary", metavar="METRIC",
                   help=f"the metric to decide on; errored cases count 0 on it (default {DEFAULT_PRIMARY})")
    p.add_argument("--fail-if-worse", metavar="METRIC[,METRIC]",
                   help=f"exit {EXIT_WORSE} when B is significantly worse than A on any of these metrics "
                        f"(sign-flip p, Holm-adjusted over the metrics named, <= {GATE_ALPHA}): a CI gate")
    p.add_argument("--shared-only", action="store_true",
                   help="when the runs cover different cases, compare the shared ones instead of refusing")
    p.add_argument("--tag", metavar="NAME", help="only cases carrying this tag (e.g. confirm on heldout)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                   help=f"randomisation resamples of the Monte-Carlo p (default {DEFAULT_RESAMPLES})")
    p.add_argument("--judged-passed", action="store_true",
                   help="`passed` reads claim_support_judged in both runs; refused (exit "
                        f"{EXIT_JUDGE_REFUSED}) unless both runs are judged by the same judge (name and prompt) and "
                        "each judge clears the floor: 30 claims shared with people, 10 of them called supported and "
                        "10 unsupported by people, the lower end of kappa's analytic 95%% interval at least "
                        "--min-judge-kappa, its recall of each verdict at least 0.7 at the Wilson lower bound "
                        "(docs/judge.md). Without it, `passed` is the people's in both runs")
    p.add_argument("--min-judge-kappa", type=float, default=DEFAULT_MIN_JUDGE_KAPPA, metavar="K",
                   help="with --judged-passed: the lower end of kappa's analytic 95%% interval each judge must reach "
                        f"(default {DEFAULT_MIN_JUDGE_KAPPA:g}: where 'substantial' agreement begins)")
    p.add_argument("--all-settings", action="store_true",
                   help="list every manifest difference, also what the machine measured (load and elapsed times), "
                        "counts that follow from the settings and a setting each place records it")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print everything as one JSON object")
    fmt.add_argument("--markdown", action="store_true", help="print Markdown tables")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # imported here: `rag-eval compare --help` starts without numpy and pydantic
    from ..report.compare import compare_runs, worse_on
    from ..report.compare_text import render_markdown, render_table
    from ..runs import find_run

    gate = _gate_metrics(args.fail_if_worse)
    (run_a, note_a), (run_b, note_b) = find_run(args.run_a, args.out), find_run(args.run_b, args.out)
    for side, note in (("A", note_a), ("B", note_b)):
        if note:
            say(f"{side}: {note}", file=sys.stderr)
    result = compare_runs(run_a, run_b, shared_only=args.shared_only, tag=args.tag, seed=args.seed,
                          resamples=args.resamples, primary=args.primary,
                          judged=args.judged_passed, min_judge_kappa=args.min_judge_kappa,
                          all_settings=args.all_settings)
    for note in result.notes:
        say(f"note: {note}", file=sys.stderr)
    worse = worse_on(result, gate) if gate else []
    if args.json:
        say(json.dumps(result.to_dict() | ({"gate": _gate_json(gate, worse)} if gate else {}),
                         indent=2, ensure_ascii=False))
    elif args.markdown:
        say(render_markdown(result))
    else:
        say(render_table(result))
    if not gate:
        return 0
    for line in _gate_lines(result, gate, worse):
        say(line, file=sys.stderr)
    return EXIT_WORSE if worse else 0


def _gate_metrics(spec: str | None) -> list[str]:
    if spec is None:
        return []
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise InputError("--fail-if-worse: name at least one metric, e.g. --fail-if-worse passed")
    return names


def _gate_lines(c: Comparison, names: Sequence[str], worse: list[tuple[MetricComparison, float]]) -> list[str]:
    if not worse:
        return [f"gate: B is not significantly worse than A on {', '.join(names)} (Holm-adjusted p > "
                f"{GATE_ALPHA}); exit 0"]
    from ..report.compare_text import p_shown

    found = "; ".join(f"{m.metric} delta {m.delta:+.3f}, p {p_shown(m.p_value)} (Holm {p_shown(p)}), {m.losses} cases "
                      "worse" for m, p in worse)
    return [f"gate: B is significantly worse than A on {found}; exit {EXIT_WORSE}"]


def _gate_json(names: Sequence[str], worse: list[tuple[MetricComparison, float]]) -> dict:
    return {"metrics": list(names), "alpha": GATE_ALPHA, "worse": [m.metric for m, _ in worse],
            "exit_code": EXIT_WORSE if worse else 0}
