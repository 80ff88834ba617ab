"""Terminal helpers shared by the two CLIs (never used by library code)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import TextIO

from .errors import RagError


class ProgressBar:
    """A one-line progress bar on stderr: `label  12/40 [#####.....] 3.1/s`. Quiet when stderr is not a tty,
    except for a final line, so logs stay readable."""

    def __init__(self, label: str, *, stream: TextIO | None = None, width: int = 28):
        self.label, self.width = label, width
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.started = time.monotonic()
        self._last = (-1, -1)

    def __call__(self, done: int, total: int) -> None:
        if (done, total) == self._last:
            return
        self._last = (done, total)
        if self.tty:
            self.stream.write("\r" + self._line(done, total))
            if done >= total:
                self.stream.write("\n")
            self.stream.flush()
        elif done >= total:
            self.stream.write(self._line(done, total) + "\n")

    def _line(self, done: int, total: int) -> str:
        filled = self.width * done // total if total else self.width
        rate = done / max(time.monotonic() - self.started, 1e-9)
        return f"{self.label} {done}/{total} [{'#' * filled}{'.' * (self.width - filled)}] {rate:.1f}/s"


def run_cli(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse, call the chosen command's `func`, and map our exceptions to exit codes (see README)."""
    # pypdf logs recoverable oddities of real-world files; bad files reach the user as our PdfError instead.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error of ours
        sys.stderr.close()
        return 0
