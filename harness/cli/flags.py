"""Argument types and flags several sub-commands share. Standard library only: `--help` imports this."""

from __future__ import annotations

import argparse

__all__ = ["LABEL_CHARS", "add_quiet", "positive_int", "run_label"]

LABEL_CHARS = 200  # the run's folder is <UTC time>-<label>: a file name holds at most 255 bytes


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run_label(text: str) -> str:
    """An argparse type: a run's label, short enough to be part of its folder's name."""
    if len(text) > LABEL_CHARS:
        raise argparse.ArgumentTypeError(f"{len(text)} characters; give at most {LABEL_CHARS} (the label is part "
                                         "of the run folder's name)")
    return text


def add_quiet(p: argparse._ActionsContainer) -> None:
    """`--quiet`: no progress on stderr, neither the terminal's bar nor the log's lines."""
    p.add_argument("--quiet", action="store_true", default=None,
                   help="no progress: neither the bar on a terminal nor, when stderr is a file or pipe, the line "
                        "at the start and every 5 s (errors, warnings and results are still shown)")
