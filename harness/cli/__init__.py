"""`rag-eval`: one sub-command per module in this package; each module has `register(subparsers)`.

Start-up is lazy: only the module of the sub-command named on the command line is imported (it alone pulls in
numpy, pydantic or the model client); the others appear in `rag-eval --help` by the one-line help of `_COMMANDS`.
`tests/test_startup.py` keeps these lines equal to what each module registers.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Iterable

from pdfrag import __version__
from pdfrag.terminal import SuggestingParser, run_cli

__all__ = ["build_parser", "main"]

# Each name is a module in this package that defines register(subparsers) and sets `func` on its parser.
_COMMANDS = {
    "run": "evaluate labelled cases end to end (same as python evaluate_rag.py)",
    "check": "check a cases file against the documents (no model calls)",
    "score": "score saved outputs with five separate checks",
    "compare": "compare two runs case by case (score interval, randomisation test, flips)",
    "export": "write a run's rows as CSV (ids, tags, status, every metric, failure stage and reasons)",
    "report": "write a self-contained HTML report of a run (optionally beside another)",
    "review": "review the claims of a run's answers (terminal, or CSV export/import), measure reviewer agreement, "
              "resolve disagreements",
    "judge": "a model judges every claim of a run's answers, stored as a reviewer",
    "rescore": "recompute a saved run's metrics against a corrected cases file",
    "draft": "draft verified test cases from your PDFs for a human to accept",
    "sweep": "run every combination of settings in a sweep file and rank them against a baseline (Holm-adjusted)",
}


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser (every sub-command's module imported), or with `commands` only those modules, the other
    sub-commands being names with their help line (enough for `rag-eval --help` and to reject a typo)."""
    full = set(_COMMANDS if commands is None else commands)
    parser = SuggestingParser(
        prog="rag-eval", description="Evaluate a PDF RAG system on labelled cases: run, check labels, score saved "
                                     "outputs, compare runs, report, review claims, judge claims with a model "
                                     "(measured against your reviewers before it counts), rescore.")
    parser.add_argument("--version", action="version", version=f"pdf-rag-eval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_line in _COMMANDS.items():
        if name in full:
            importlib.import_module(f"harness.cli.{name}").register(sub)
        else:
            sub.add_parser(name, help=help_line)
    return parser


def chosen_command(argv: list[str]) -> list[str]:
    """The sub-command named on the command line (the first word that is not an option), if it is one of ours."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return [first] if first in _COMMANDS else []


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    return run_cli(build_parser(chosen_command(words)), words)


if __name__ == "__main__":
    sys.exit(main())
