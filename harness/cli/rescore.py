"""`rag-eval rescore RUN --cases FILE`: recompute every metric of a saved run after a label fix; no model call."""

from __future__ import annotations

import argparse
import sys

from pdfrag.terminal import say

from ..review.rescore import rescore_run
from .common import render_summary
from .flags import run_label


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rescore", help="recompute a saved run's metrics against a corrected cases file",
                       description="Score the stored outputs of RUN (retrieved passages, answers, citations) "
                                   "against the labels in --cases, with no model call, into a new run "
                                   "directory whose manifest names its source.")
    p.add_argument("run", metavar="RUN", help="run directory to rescore")
    p.add_argument("--cases", required=True, metavar="FILE", help="the corrected cases JSONL")
    p.add_argument("--out", metavar="DIR", help="where the new run directory goes (default: beside RUN)")
    p.add_argument("--label", type=run_label, help="name of the new run (default: the source label + '-rescored')")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = rescore_run(args.run, args.cases, out=args.out, label=args.label, argv=sys.argv)
    say(render_summary(result.summary, result.manifest))
    if result.unanswered_cases:
        say(f"\nnot scored: {len(result.unanswered_cases)} case(s) of {args.cases} that {args.run} never answered: "
              f"{', '.join(result.unanswered_cases)}")
    source = result.manifest.rescored_from
    say(f"\nrescored {source.run_id if source else args.run} into {result.run_dir}")
    return 0
