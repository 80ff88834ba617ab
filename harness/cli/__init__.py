"""`rag-eval`: one sub-command per module in this package; each module has `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import sys

from chatbot import __version__
from chatbot.terminal import run_cli

# Each name is a module in this package that defines register(subparsers) and sets `func` on its parser.
_COMMANDS = ["run", "check", "score", "compare", "export", "report", "review", "judge", "rescore", "draft", "sweep"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rag-eval", description="Evaluate a PDF RAG system on labelled cases: run, check labels, score saved "
                                     "outputs, compare runs, report, review claims, judge claims with a model "
                                     "(measured against your reviewers before it counts), rescore.")
    parser.add_argument("--version", action="version", version=f"pdf-rag-eval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _COMMANDS:
        importlib.import_module(f"harness.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_cli(build_parser(), argv)

if __name__ == "__main__":
    sys.exit(main())
