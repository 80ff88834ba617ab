"""Commands printed for a user to copy: `rag-eval` and its words, each quoted for a POSIX shell.

A run folder, a label or a file name can hold anything a file name can (`res $(touch PWNED) ; x`): every command
the harness prints (after a run or a score, in an error that says how to resume, in a report, in failed.txt) is
built here, so pasting it into bash runs `rag-eval` with those words and nothing else.
"""

from __future__ import annotations

import os
import shlex

__all__ = ["command"]


def command(*words: str | os.PathLike[str]) -> str:
    """`rag-eval WORD…` with every word quoted by `shlex.quote` (plain words such as `report` or `--csv` stay as
    they are)."""
    return " ".join(["rag-eval", *(shlex.quote(os.fspath(w)) for w in words)])
