"""`rag-eval report RUN [--vs RUN_B] [--out FILE.html]`: one self-contained HTML file (no script, no network)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pdfrag.safe_files import atomic_write_text
from pdfrag.terminal import say

from ..errors import InputError
from ..report.markup import LIST_LIMIT
from .flags import positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report of a run (optionally beside another)",
                       description="One HTML file with no script and no external assets. It opens with what "
                                   "failed: a funnel of where cases were lost (retrieval, the answer's facts, "
                                   "citation validation, the answer/abstain decision, errored, passed), contents "
                                   "by failure kind, tag and document with links to the cases, and a per-tag and "
                                   "per-document breakdown of the main metrics; then a chart per metric family and "
                                   "the cases, failing ones first, each with question, expected evidence, retrieved "
                                   "ranks, answer, citations with the quote marked in its passage, failure reasons "
                                   "and review status. All document and model text is escaped.")
    p.add_argument("run", metavar="RUN", help="run directory")
    p.add_argument("--vs", metavar="BASELINE", help="a baseline run shown beside RUN: the baseline is A and RUN is B "
                                                    "everywhere, as in `rag-eval compare BASELINE RUN`")
    p.add_argument("--out", metavar="FILE.html", help="where to write (default: RUN/report.html)")
    p.add_argument("--limit", type=positive_int, default=LIST_LIMIT, metavar="N",
                   help="items per list (cases of a contents group or of the failing / passing table, groups of a "
                        "breakdown); past it the first N are shown with their count and the `rag-eval export` "
                        "command for every row (default %(default)s)")
    p.add_argument("--all-settings", action="store_true",
                   help="with --vs: list every manifest difference, also what the machine measured (load and elapsed "
                        "times), counts that follow from the settings and a setting each place records it")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    page = _page(args)
    out = Path(args.out) if args.out else Path(args.run) / "report.html"
    try:
        atomic_write_text(out, page)
    except OSError as exc:
        raise InputError(f"{out}: cannot write the report ({exc.strerror})") from exc
    say(f"report written to {out}")
    return 0


def _page(args: argparse.Namespace) -> str:
    from ..records import in_bulk  # imported here: `rag-eval report --help` starts without pydantic

    return in_bulk(_render)(args)  # the rows stay alive until the page is made: no cyclic collection walks them


def _render(args: argparse.Namespace) -> str:
    from ..report.html import render_report  # imported here: `rag-eval report --help` starts without numpy
    from ..report.report_run import read_report_run

    runs = [read_report_run(args.run), *([read_report_run(args.vs)] if args.vs else [])]
    for note in (n for r in runs for n in r.notes):
        say(f"note: {note}", file=sys.stderr)
    return render_report(runs[0], runs[1] if args.vs else None, limit=args.limit, all_settings=args.all_settings)
