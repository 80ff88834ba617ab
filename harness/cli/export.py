"""`rag-eval export RUN --csv rows.csv`: a run's rows as CSV, one line per case (and repeat)."""

from __future__ import annotations

import argparse
import sys

from pdfrag.safe_files import atomic_write_text
from pdfrag.terminal import printable, say

from ..report.csv_export import rows_csv
from ..runs import load_run


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a run's rows as CSV (ids, tags, status, every metric, failure stage "
                                      "and reasons)",
                       description="One line per case: case_id, repeat, question, tags, status, error, every "
                                   "metric (empty = not applicable), failure_stage, failure_reasons. Cells a "
                                   "spreadsheet would read as formulas get a leading '.")
    p.add_argument("run", metavar="RUN", help="run directory")
    p.add_argument("--csv", required=True, metavar="FILE", help="where to write the CSV ('-' for standard output)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    loaded = load_run(args.run)
    text = rows_csv(loaded.rows, loaded.manifest.metrics)
    if args.csv == "-":  # a pipe gets the CSV as written; a terminal gets it escaped, since a system's error
        # text may hold escape sequences (line ends as newlines, not CRLF)
        sys.stdout.write(printable(text.replace("\r\n", "\n")) if sys.stdout.isatty() else text)
        return 0
    atomic_write_text(args.csv, text)
    say(f"{len(loaded.rows)} rows of {loaded.name} written to {args.csv}", file=sys.stderr)
    return 0
