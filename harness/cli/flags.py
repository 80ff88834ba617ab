"""Argument types and flags several sub-commands share. Standard library only: `--help` imports this."""

from __future__ import annotations

import argparse

__all__ = ["add_quiet", "positive_int"]


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_quiet(p: argparse._ActionsContainer) -> None:
    """`--quiet`: no progress on stderr, neither the terminal's bar nor the log's lines."""
    p.add_argument("--quiet", action="store_true", default=None,
                   help="no progress: neither the bar on a terminal nor, when stderr is a file or pipe, the line "
                        "at the start and every 5 s (errors, warnings and results are still shown)")
