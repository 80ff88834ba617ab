"""`rag-eval score`: five separate checks over saved outputs (tutorial CSV or JSONL layout); no model calls."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from chatbot.errors import InputError
from harness.chart import text_bars
from harness.score import SCORE_CHECKS, ScoreResult, ScoreSummary, chart_bars, score_saved, write_outputs

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


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


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
    parser.add_argument("--k", type=_positive, default=2, metavar="N",
                        help="chunks the lexical retriever returns when a case has no retrieved ids (default: 2)")
    parser.add_argument("--na-as-pass", action="store_true",
                        help="count not-applicable checks as 1.0 in the means (as the tutorial tables do)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="write score_rows.jsonl, score_summary.json and score_chart.svg here")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of tables")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = score_saved(args.cases, args.chunks, args.claims, k=args.k, na_as_pass=args.na_as_pass)
    try:
        written = write_outputs(result, args.out) if args.out else ()
    except OSError as exc:
        raise InputError(f"--out {args.out}: cannot write there ({exc.strerror or exc})") from exc
    if args.json:
        print(json.dumps(result.summary.to_json(), indent=2, ensure_ascii=False))
    else:
        print(render(result, source=str(args.cases)))
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0  # a report: failing cases are results, not errors


def render(result: ScoreResult, *, source: str) -> str:
    """The terminal report: what was scored, the summary block, the failed-case table and the bar chart."""
    summary = result.summary
    parts = [_heading(summary, source), summary_block(summary), failed_table(result), text_bars(chart_bars(summary))]
    return "\n\n".join(parts)


def _heading(summary: ScoreSummary, source: str) -> str:
    means = "not-applicable counted as 1.0 (--na-as-pass)" if summary.na_as_pass else "means over scored cases only"
    lines = [f"score {source}: {means}"]
    if summary.lexical_case_ids:
        cases = ", ".join(summary.lexical_case_ids)
        lines.append(f"retrieved ids from the lexical retriever (top {summary.k}): {cases}")
    return "\n".join(lines)


def summary_block(summary: ScoreSummary) -> str:
    """`cases N`, `passes N`, then one `label 0.000  (scored N, n/a N)` line per check."""
    lines = [f"cases {summary.cases}", f"passes {summary.passes}"]
    for check in SCORE_CHECKS:
        c = summary.check(check.name)
        mean = "n/a" if c.mean is None else f"{c.mean:.3f}"
        lines.append(f"{check.label} {mean}  (scored {c.scored}, n/a {c.not_applicable})")
    return "\n".join(lines)


def failed_table(result: ScoreResult) -> str:
    """Each failed case with every check's value, and the reasons beneath it."""
    failed = result.failed
    if not failed:
        return f"failed cases: 0 of {len(result.rows)}"
    id_width = max(len("case"), *(len(r.case_id) for r in failed))
    widths = [max(5, len(c.short)) for c in SCORE_CHECKS]
    header = "  ".join([f"{'case':<{id_width}}", *(f"{c.short:>{w}}" for c, w in zip(SCORE_CHECKS, widths))])
    lines = [f"failed cases: {len(failed)} of {len(result.rows)}", header]
    for row in failed:
        values = ("n/a" if (v := row.value(c.name)) is None else f"{v:.3f}" for c in SCORE_CHECKS)
        lines.append("  ".join([f"{row.case_id:<{id_width}}", *(f"{v:>{w}}" for v, w in zip(values, widths))]))
        lines += [f"{'':<{id_width}}  - {reason}" for reason in row.failures]
    return "\n".join(lines)
