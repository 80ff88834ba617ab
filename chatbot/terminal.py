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
    except for a final line, so logs stay readable. What the first update already counts as done (from a cache,
    or written before a resume) is shown as `reused` and left out of the rate. With `delay_s`, nothing is shown
    until the work has taken that long."""

    def __init__(self, label: str, *, stream: TextIO | None = None, width: int = 28, reused: str = "from cache",
                 delay_s: float = 0.0):
        self.label, self.width, self.reused_word, self.delay_s = label, width, reused, delay_s
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.started = time.monotonic()
        self._last = (-1, -1)
        self._reused: int | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._reused is None:
            self._reused = done
        if (done, total) == self._last or time.monotonic() - self.started < self.delay_s:
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
        reused = self._reused or 0
        fresh = done - reused
        parts = [f"{fresh / max(time.monotonic() - self.started, 1e-9):.1f}/s"] if fresh > 0 else []
        parts += [f"{reused} {self.reused_word}"] if reused else []
        return f"{self.label} {done}/{total} [{'#' * filled}{'.' * (self.width - filled)}] {', '.join(parts)}"


def run_cli(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse, call the chosen command's `func`, and map our exceptions to exit codes (docs/evaluate.md, Exit codes)."""
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
    except OSError as exc:  # an unwritable or full output folder, before any row: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}; choose another folder or free space, and run again",
              file=sys.stderr)
        return 1
