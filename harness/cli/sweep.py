"""`rag-eval sweep`: many settings in one command, one run per cell, one leaderboard with Holm-adjusted p-values."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

from pdfrag.terminal import clock, printable, say

from ..chart import p_text
from ..errors import InputError
from ..sweep.dry import dry_run
from ..sweep.leaderboard import WORSE, Leaderboard
from ..sweep.leaderboard_files import leaderboard_text
from ..sweep.plan import DEFAULT_MAX_CELLS, Cell, SweepPlan, load_sweep
from ..sweep.run import resume_plan, run_sweep
from .common import dry_run_text
from .flags import EXIT_WORSE, add_base_args, given_flags

_PATHS = ("docs", "cases", "out", "prompt", "cache_dir")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run every combination of settings in a sweep file and rank them against a "
                                     "baseline (Holm-adjusted)",
                       description="Expand the sweep file (settings with lists of values) and --grid axes into "
                                   "cells, run each as a normal run inside one sweep directory, and write "
                                   "leaderboard.json/.md/.svg/.html there. Run flags form the base of every cell.")
    p.add_argument("sweep_file", nargs="?", help="TOML: run settings, lists for the swept ones, and baseline, "
                                                 "primary, alpha, select-on, confirm-on (docs/sweeps.md)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                   help="add an axis or replace the file's values for KEY (repeatable), e.g. --grid top-k=2,4")
    p.add_argument("--dry-run", action="store_true",
                   help="print the cells and how many embedding and chat calls they need and how many are cached")
    p.add_argument("--max-cells", type=int, default=DEFAULT_MAX_CELLS, metavar="N",
                   help=f"refuse a sweep of more than N cells, counted before any is built "
                        f"(default {DEFAULT_MAX_CELLS})")
    p.add_argument("--no-answer-cache", action="store_true",
                   help="ask the model again instead of reusing stored replies (the cache is still written)")
    p.add_argument("--fail-if-worse", action="store_true",
                   help=f"exit {EXIT_WORSE} when any cell is significantly worse than the baseline on the primary "
                        "metric (its leaderboard verdict `worse`, Holm-adjusted): a CI gate")
    g = add_base_args(p)
    g.add_argument("--resume", metavar="SWEEP_DIR",
                   help="finish an interrupted sweep: complete cells are kept, the stopped one resumes; a changed "
                        "sweep file or changed flags are refused")
    p.set_defaults(func=sweep)


def sweep(args: argparse.Namespace) -> int:
    flags = given_flags(args, skip=("sweep_file", "grid", "no_answer_cache", "max_cells", "fail_if_worse"))
    flags["answer_cache"] = False if args.no_answer_cache else (None if args.resume else True)
    if flags.pop("offline", None):  # --offline is an alias of --system offline, as for rag-eval run
        flags["system"] = "offline"
    for key in _PATHS:  # saved in sweep.json: a resume from another folder must find the same files
        if flags.get(key) is not None:
            flags[key] = str(Path(flags[key]).resolve())
    if args.resume:
        plan, flags, grid = resume_plan(args.resume, args.sweep_file, args.grid, flags)
    else:
        if args.sweep_file is None and not args.grid:
            raise InputError("give a sweep file (rag-eval sweep sweep.toml) or --grid KEY=V1,V2, or --resume DIR")
        grid = args.grid
        # primary is checked against every metric name at the cells' k values, `passed` included
        plan = load_sweep(args.sweep_file, grid=grid, flags=flags, max_cells=args.max_cells)
    if args.dry_run:
        say(f"{len(plan.cells)} cells; baseline {plan.baseline}; primary {plan.primary}; alpha {plan.alpha:g}",
            flush=True)  # the count first: counting the calls below reads the documents
        say(_dry_run_text(plan, args.assume_seconds_per_call))
        return 0
    shown = SweepProgress(len(plan.cells), quiet=bool(args.quiet))
    try:
        result = run_sweep(plan, flags, grid=grid, resume=args.resume, on_cell=shown.cell,
                           cell_progress=shown.inside, argv=sys.argv)
    finally:
        shown.close()
    say(leaderboard_text(result.board, result.selection))
    say(f"sweep written to {result.sweep_dir}: {len(result.run_dirs)} run directories, "
          + ", ".join(p.name for p in result.files.values()))
    return _gate(result.board) if args.fail_if_worse else 0


def _gate(board: Leaderboard) -> int:
    worse = [e for e in board.entries if e.verdict == WORSE]
    if not worse:
        say(f"gate: no cell is significantly worse than the baseline {board.baseline} on {board.primary}; exit 0",
              file=sys.stderr)
        return 0
    cells = "; ".join(f"{e.label} (delta {e.delta:+.3f}, Holm p {p_text(e.p_holm)})" for e in worse
                      if e.delta is not None and e.p_holm is not None)
    say(f"gate: significantly worse than the baseline {board.baseline} on {board.primary}: {cells}; "
          f"exit {EXIT_WORSE}", file=sys.stderr)
    return EXIT_WORSE


class SweepProgress:
    """A sweep's progress on stderr. On a terminal, one status line redrawn in place: cells done, the overall
    share with elapsed time and ETA, and each running cell's stage (cells may run two at a time). Elsewhere (a log
    file, a pipe), plain lines: the overall line at the start, one line per cell event, and every `every_s` seconds
    (a heartbeat thread) the overall line with each running cell's stage and count, so that a slow server still
    shows life. The overall share counts a running cell by its cases answered; the ETA assumes the cells left take
    as long as the ones run so far (kept cells do not count). With `quiet`, nothing is shown."""

    def __init__(self, cells: int, *, stream: TextIO | None = None, now: Callable[[], float] = time.monotonic,
                 width: int = 160, quiet: bool = False, every_s: float = 5.0):
        self.cells, self.stream, self.now, self.width = cells, stream or sys.stderr, now, width
        self.quiet, self.every_s = quiet, every_s
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.started, self.done, self.kept = now(), 0, 0
        self.running: dict[int, list] = {}  # number -> [label, started, stage, done, total]
        self.lock = threading.Lock()
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None
        if not self.tty and not quiet:
            self._say(self.overall())
            if every_s > 0:
                self._beat = threading.Thread(target=self._heartbeat, name="sweep progress", daemon=True)
                self._beat.start()

    def cell(self, number: int, total: int, cell: Cell, state: str) -> None:
        with self.lock:
            entry = self.running.setdefault(number, [cell.label, self.now(), "starting", 0, 0])
            what = {"kept": "complete, kept", "resume": "resuming", "start": "running",
                    "done": f"done in {self.now() - entry[1]:.1f} s"}[state]
            if state in ("kept", "done"):
                self.done += 1
                self.kept += state == "kept"
                del self.running[number]
            self._say(f"cell {number}/{total} {cell.label}: {what}"
                      + (f"; {self.overall()}" if state == "done" and not self.tty else ""))

    def inside(self, number: int, stage: str, done: int, total: int) -> None:
        with self.lock:
            if number in self.running:
                self.running[number][2:] = [stage, done, total]
                self._draw()

    def overall(self) -> str:
        running = sum(d / t for _, _, stage, d, t in self.running.values() if stage == "cases" and t)
        fresh = self.done - self.kept + running
        share = (self.done + running) / self.cells if self.cells else 1.0
        elapsed = self.now() - self.started
        left = self.cells - self.done - running
        eta = f", ETA {clock(elapsed * left / fresh)}" if fresh > 0 and left > 0 else ""
        return f"sweep {self.done}/{self.cells} cells done, {share:.0%}, elapsed {clock(elapsed)}{eta}"

    def _status(self) -> str:
        cells = [f"cell {n} {label}: {stage} {d}/{t}" for n, (label, _, stage, d, t) in sorted(self.running.items())]
        return " | ".join([self.overall(), *cells])

    def _draw(self) -> None:
        if self.tty and not self.quiet:
            self.stream.write("\r\x1b[K" + printable(self._status())[:self.width])
            self.stream.flush()

    def _say(self, text: str) -> None:
        if self.quiet:
            return
        self.stream.write(("\r\x1b[K" if self.tty else "") + printable(text) + "\n")
        self._draw()
        self.stream.flush()

    def _heartbeat(self) -> None:
        while not self._stopped.wait(self.every_s):
            with self.lock:
                if not self._stopped.is_set():
                    try:
                        self._say(self._status())
                    except (OSError, ValueError):  # the log went away: progress is not worth a crash
                        self._stopped.set()

    def close(self) -> None:
        self._stopped.set()
        if self._beat is not None and self._beat is not threading.current_thread():
            self._beat.join(timeout=self.every_s + 1)
        if self.tty and not self.quiet:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _dry_run_text(plan: SweepPlan, assume: float | None) -> str:
    lines = [f"  {cell.label}" for cell in plan.cells]
    return "\n".join(lines) + "\n" + dry_run_text(dry_run(plan), plan.cells[0].settings, assume)
