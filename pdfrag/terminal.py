"""Terminal helpers shared by the two CLIs: progress (a bar on a terminal, plain lines in a log), the parser that
suggests a flag, exit codes. Library code builds lines and never prints; the sweep's progress text borrows `clock`
from here to format durations.

Everything the CLIs print goes through `say` (or `printable`): text from systems, PDFs and CSVs may hold escape
sequences that clear the screen, retitle the window or draw fake text, or bidi overrides that reverse a line.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import re
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterator, NoReturn, TextIO

from .errors import RagError, Stopped

# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides, isolates and marks.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` safe to show on a terminal: each control character and bidi control written as `\\uXXXX` (also a
    valid JSON escape, so JSON output stays JSON); tabs and newlines kept."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def say(*values: Any, **kwargs: Any) -> None:
    """`print` for the CLIs, with every value made `printable`."""
    print(*(printable(str(v)) for v in values), **kwargs)


def clock(seconds: float) -> str:
    """Seconds as `m:ss`, or `h:mm:ss` from an hour on."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressBar:
    """Progress of one stage on stderr. On a terminal, one line redrawn in place: `label  12/40 [#####.....]
    3.1/s, elapsed 0:04, ETA 0:09`. Elsewhere (a log file, a pipe, CI), plain lines a log and `tail -f` read:
    one when the stage starts, one every `every_s` seconds while it runs, from a heartbeat thread, so that a slow
    server still shows life when nothing finished (`cases 12/50 24%, 0.5/s, elapsed 0:24, ETA 1:16`), and one
    at the end. The ETA is the work left at the rate so far: what the first update already counts as done (from
    a cache, or written before a resume) is shown as `reused` and left out of the rate. With `delay_s`, nothing is
    shown until the work has taken that long; with `quiet`, nothing at all. `close()` (or leaving a `with`
    block) stops the heartbeat; it also stops once the stage is done."""

    def __init__(self, label: str, *, stream: TextIO | None = None, width: int = 28, reused: str = "from cache",
                 delay_s: float = 0.0, now: Callable[[], float] = time.monotonic, quiet: bool = False,
                 every_s: float = 5.0):
        self.label, self.width, self.reused_word, self.delay_s, self.now = label, width, reused, delay_s, now
        self.quiet, self.every_s = quiet, every_s
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.started = now()
        self._last = (-1, -1)
        self._reused: int | None = None
        self._lock = threading.Lock()  # updates come from worker threads, lines also from the heartbeat
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, done: int, total: int, *, reused: int | None = None) -> None:
        """Show `done` of `total`. `reused`: how many of the done were reused (cached), when the caller knows;
        else what the first update already counts is taken as reused."""
        if self.quiet:
            return
        with self._lock:
            if reused is not None:
                self._reused = reused
            elif self._reused is None:
                self._reused = done
            if (done, total) == self._last or self.now() - self.started < self.delay_s:
                return
            first, self._last = self._last == (-1, -1), (done, total)
            if self.tty:
                self._draw_bar()
                if first and done < total and self.every_s > 0:
                    self._start_heartbeat()  # the clock moves while the first batch or case is still out
            elif first or done >= total:
                self._write_log_line(first=first)
                if first and done < total and self.every_s > 0:
                    self._start_heartbeat()
            if done >= total:
                self._stopped.set()

    def close(self) -> None:
        """Stop the heartbeat (no more lines); safe to call twice, or from any thread."""
        self._stopped.set()
        beat = self._beat
        if beat is not None and beat is not threading.current_thread():
            beat.join(timeout=self.every_s + 1)

    def _start_heartbeat(self) -> None:
        self._beat = threading.Thread(target=self._heartbeat, name=f"progress {self.label}", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        every = min(self.every_s, 1.0) if self.tty else self.every_s  # a bar's clock ticks; a log gets a line
        while not self._stopped.wait(every):
            with self._lock:
                if self._stopped.is_set():
                    return
                if self.tty:
                    self._draw_bar()
                else:
                    self._write_log_line()

    def _draw_bar(self) -> None:
        """The bar redrawn in place (the lock is held), ended by a newline once the stage is done."""
        done, total = self._last
        try:
            self.stream.write("\r\x1b[K" + self._line(done, total))  # K: clear what a longer line left
            if done >= total:
                self.stream.write("\n")
            self.stream.flush()
        except (OSError, ValueError):
            self._stopped.set()

    def _write_log_line(self, *, first: bool = False) -> None:
        """The current state as one plain line (the lock is held); the first has no rate: nothing is timed yet."""
        done, total = self._last
        try:
            self.stream.write(self._log_line(done, total, timed=not first) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # the log went away (closed, disk full): progress is not worth a crash
            self._stopped.set()

    def _parts(self, done: int, total: int, *, timed: bool = True) -> list[str]:
        """Rate, reused, elapsed, ETA; without `timed` (nothing timed yet), no rate or ETA; while no ETA can be
        given, what the stage waits for."""
        reused = self._reused or 0
        fresh = done - reused if timed else 0
        elapsed = self.now() - self.started
        parts = [rate_text(fresh, elapsed)] if fresh > 0 else []
        parts += [f"{reused} {self.reused_word}"] if reused else []
        parts.append(f"elapsed {clock(elapsed)}")
        if fresh > 0 and done < total:
            parts.append(f"ETA {clock((total - done) * elapsed / fresh)}")
        elif done < total:
            parts.append("waiting for the next to finish" if done else "waiting for the first to finish")
        return parts

    def _line(self, done: int, total: int) -> str:
        filled = self.width * done // total if total else self.width
        return printable(f"{self.label} {done}/{total} [{'#' * filled}{'.' * (self.width - filled)}] "
                         f"{', '.join(self._parts(done, total))}")

    def _log_line(self, done: int, total: int, *, timed: bool = True) -> str:
        share = f" {done / total:.0%}" if total else ""
        return printable(f"{self.label} {done}/{total}{share}, {', '.join(self._parts(done, total, timed=timed))}")


def rate_text(count: int, seconds: float) -> str:
    """`count` done in `seconds`: "3.1/s", or, slower than one a second, the seconds each takes ("45 s each",
    "2.5 s each") instead of a rate that rounds to "0.0/s"."""
    if count >= seconds:
        return f"{count / max(seconds, 1e-9):.1f}/s"
    each = seconds / count
    return f"{each:.1f} s each" if each < 10 else f"{each:.0f} s each"


class Stages:
    """One ProgressBar per stage of a command (`reading PDFs`, `embedding`, `cases`, ...), made by `make(stage)`
    on the stage's first update; callable as `progress(stage, done, total[, reused])`. The stages run one after
    the other: a new stage stops the heartbeats of the earlier ones. `close()` (or leaving a `with` block, on an
    error or Ctrl-C too) stops them all."""

    def __init__(self, make: Callable[[str], ProgressBar]):
        self.make = make
        self.bars: dict[str, ProgressBar] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, stage: str, done: int, total: int, reused: int | None = None) -> None:
        with self._lock:
            bar = self.bars.get(stage)
            if bar is None:
                for earlier in self.bars.values():
                    earlier.close()
                bar = self.bars[stage] = self.make(stage)
        bar(done, total, reused=reused)

    def close(self) -> None:
        for bar in list(self.bars.values()):
            bar.close()


class SuggestingParser(argparse.ArgumentParser):
    """An argument parser whose refusal of a word outside a fixed list (a sub-command, a `--backend`) names the
    closest one: "invalid choice: 'comapre' (choose from ...); did you mean compare?". Its sub-command parsers are
    of this class too (argparse makes them with the parent's class)."""

    def error(self, message: str) -> NoReturn:
        """The error first, then the usage: a did-you-mean is the line to read, not the end of 40 lines of usage."""
        self.exit(2, f"{self.prog}: error: {message}\n{self.format_usage()}")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            choices = [str(c) for c in action.choices or ()]
            close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
            if not close:
                raise
            raise argparse.ArgumentError(action, f"{exc.message}; did you mean {close[0]}?") from None


def parse_or_suggest(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """`parser.parse_args`, but an unknown flag is refused by the sub-command it was given to, with that
    sub-command's usage and the closest flag it has ("did you mean --chunk-size?"); exit 2."""
    args, unknown = parser.parse_known_args(argv)
    if not unknown:
        return args
    chosen = parser
    while True:  # down the sub-commands named on the command line (`rag-eval draft review ...`)
        subs = [a for a in chosen._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name not in (subs[0].choices if subs else {}):
            break
        chosen = subs[0].choices[name]
    flags = [o for a in chosen._actions for o in a.option_strings if o.startswith("--")]
    hints = [f"did you mean {close[0]}?" for word in unknown if word.startswith("-")
             for close in [difflib.get_close_matches(word.split("=", 1)[0], flags, n=1, cutoff=0.6)] if close]
    chosen.error(f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(hints)})" if hints else ""))
    raise AssertionError("unreachable")  # error() exits


STOP_SIGNALS = ("SIGTERM", "SIGHUP")


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Stopped` in the main thread for the length of the block, as Ctrl-C raises
    KeyboardInterrupt (elsewhere than the main thread, or where a handler of the caller's is set, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {}
    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) in (signal.SIG_DFL, None):
            before[number] = signal.signal(number, _raise_stopped)
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def _raise_stopped(signum: int, frame: Any) -> None:
    raise Stopped(signum, signal.Signals(signum).name)


def stopped_how(exc: KeyboardInterrupt) -> str:
    """"interrupted" (Ctrl-C) or "stopped by SIGTERM"."""
    return f"stopped by {exc.name}" if isinstance(exc, Stopped) else "interrupted"


def stop_exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + (exc.signum if isinstance(exc, Stopped) else signal.SIGINT)


def run_cli(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse, call the chosen command's `func`, and map our exceptions to exit codes (docs/evaluate.md, Exit codes)."""
    # pypdf logs recoverable oddities of real-world files; bad files reach the user as our PdfError instead.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    args = parse_or_suggest(parser, argv)
    try:
        with stop_signals():
            return int(args.func(args) or 0)
    except RagError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print(stopped_how(exc), file=sys.stderr)
        return stop_exit_code(exc)
    except BrokenPipeError:  # output piped into `head` and the like: not an error of ours
        sys.stderr.close()
        return 0
    except OSError as exc:  # an unwritable or full output folder, before any row: one line, not a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        say(f"error: {where}{exc.strerror or exc}; choose another folder or free space, and run again",
              file=sys.stderr)
        return 1
