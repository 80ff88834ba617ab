"""`rag-eval score`: five separate checks over saved outputs (tutorial CSV or JSONL layout); no model calls."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pdfrag.terminal import say

from ..chart import fmt, text_bars
from ..errors import command
from ..records import Summary
from ..saved.case_rows import default_workers
from ..saved.to_run import PASS_LABELS, ScoredRun, chart_bars, failed_table, score_to_run
from .flags import positive_int, run_label

_EPILOG = """\
layouts (chosen by file extension, .csv or .jsonl):
  chunks  chunk_id, topic, text
  cases   case_id, question, expected_chunk_ids, required_points, candidate_answer,
          cited_chunk_ids, should_abstain, candidate_abstains [, retrieved_chunk_ids]
  claims  case_id, claim, support_chunk_ids   (empty support = unsupported claim)
CSV lists are pipe-separated (P1|P3); a required point may list alternatives
separated by ';'; booleans are true/false/yes/no/1/0. JSONL lines follow
harness/schemas/saved_{case,chunk,claim}.schema.json. Cases without retrieved ids
get the top --k chunks of a lexical (BM25) retriever over the chunks.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score saved outputs with five separate checks",
        description=__doc__,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cases", required=True, type=Path, metavar="FILE", help="cases file (.csv or .jsonl)")
    parser.add_argument("--chunks", type=Path, metavar="FILE",
                        help="chunks file (default: chunks.<ext> beside --cases)")
    parser.add_argument("--claims", type=Path, metavar="FILE",
                        help="claim annotations (default: claims.<ext> beside --cases)")
    parser.add_argument("--k", type=positive_int, default=2, metavar="N",
                        help="chunks the lexical retriever returns when a case has no retrieved ids (default: 2)")
    parser.add_argument("--na-as-pass", action="store_true",
                        help="count not-applicable checks as 1.0 in the means (as the tutorial tables do)")
    parser.add_argument("--out", type=Path, metavar="DIR", default=Path("results"),
                        help="where the run directory goes (rows, manifest, summary, failed.txt, chart.svg; "
                             "default: %(default)s)")
    parser.add_argument("--label", type=run_label,
                        help="a name for this run, part of its directory name (default: score)")
    parser.add_argument("--workers", type=positive_int, metavar="N",
                        help="processes that score the cases (default: one per processor, at most 8; 1 scores in "
                             "this process); rows and summary are the same whatever N")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of tables")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    scored = score_to_run(args.cases, args.chunks, args.claims, out=args.out, label=args.label, k=args.k,
                          na_as_pass=args.na_as_pass,
                          workers=args.workers or default_workers())  # OSError (an unwritable --out): exit 1
    for warning in scored.warnings:
        say(f"warning: {warning}", file=sys.stderr)
    if args.json:
        say(json.dumps(scored.summary.to_json(), indent=2, ensure_ascii=False))
    else:
        say(render(scored, source=str(args.cases)))
    say(f"run written to {scored.run_dir} ({command('report', scored.run_dir)})", file=sys.stderr)
    return 0  # a report: failing cases are results, not errors


def render(scored: ScoredRun, *, source: str) -> str:
    """The terminal report: what was scored, the summary block, the failed-case table and the bar chart."""
    parts = [_heading(scored, source), summary_block(scored.summary), failed_table(scored),
             text_bars(chart_bars(scored.summary))]
    return "\n\n".join(parts)


def _heading(scored: ScoredRun, source: str) -> str:
    summary, lexical = scored.summary, scored.lexical
    means = "not-applicable counted as 1.0 (--na-as-pass)" if summary.na_as_pass else "means over scored cases only"
    lines = [f"score {source}: {means}"]
    if lexical.total:
        more = lexical.total - len(lexical.items)
        lines.append(f"retrieved ids from the lexical retriever (top {scored.manifest.settings.lexical_k}): "
                     + ", ".join(lexical.items) + (f" and {more} more" if more else ""))
    return "\n".join(lines)


def summary_block(summary: Summary) -> str:
    """`cases N`, `passes N` with the checks it needs, one `label 0.000  (scored N, n/a N)` line per check that
    feeds `passed` (the tutorial's five, then the harness's own by their names), and the reviewer warnings."""
    lines = [f"cases {summary.rows}", f"passes {summary.passes}  (every applicable check passed: the lines below)"]
    for name, label in PASS_LABELS.items():
        c = summary.metrics.get(name)
        if c is not None:  # a run scored before the check existed does not have it
            lines.append(f"{label} {fmt(c.mean)}  (scored {c.scored}, n/a {c.not_applicable})")
    if summary.warnings is not None:
        shown = [f"{kind} {n}" for kind, n in summary.warnings.items() if n]
        lines.append("reviewer warnings (rows): " + (", ".join(shown) if shown else "none"))
    return "\n".join(lines)
