"""`rag-eval sweep`: many settings in one command, one run per cell, one leaderboard with Holm-adjusted p-values."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from chatbot.errors import InputError

from ..sweep.dry import dry_run
from ..sweep.leaderboard import WORSE, Leaderboard
from ..sweep.leaderboard_files import leaderboard_text
from ..sweep.plan import Cell, SweepPlan, load_sweep
from ..sweep.run import resume_plan, run_sweep
from .compare import EXIT_WORSE
from .run import add_base_args, given_flags

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
    flags = given_flags(args, skip=("sweep_file", "grid", "dry_run", "no_answer_cache",
                                                "fail_if_worse"))
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
        plan = load_sweep(args.sweep_file, grid=grid, flags=flags)
    if args.dry_run:
        print(_dry_run_text(plan))
        return 0
    started: dict[int, float] = {}

    def on_cell(number: int, total: int, cell: Cell, state: str) -> None:
        # cells may run two at a time, so one line per event instead of progress bars
        started.setdefault(number, time.monotonic())
        what = {"kept": "complete, kept", "resume": "resuming", "start": "running",
                "done": f"done in {time.monotonic() - started[number]:.1f} s"}[state]
        print(f"cell {number}/{total} {cell.label}: {what}", file=sys.stderr, flush=True)

    result = run_sweep(plan, flags, grid=grid, resume=args.resume, on_cell=on_cell,
                       argv=sys.argv)
    print(leaderboard_text(result.board, result.selection))
    print(f"sweep written to {result.sweep_dir}: {len(result.run_dirs)} run directories, "
          + ", ".join(p.name for p in result.files.values()))
    return _gate(result.board) if args.fail_if_worse else 0


def _gate(board: Leaderboard) -> int:
    worse = [e for e in board.entries if e.verdict == WORSE]
    if not worse:
        print(f"gate: no cell is significantly worse than the baseline {board.baseline} on {board.primary}; exit 0",
              file=sys.stderr)
        return 0
    cells = "; ".join(f"{e.label} (delta {e.delta:+.3f}, Holm p {e.p_holm:.3f})" for e in worse
                      if e.delta is not None and e.p_holm is not None)
    print(f"gate: significantly worse than the baseline {board.baseline} on {board.primary}: {cells}; "
          f"exit {EXIT_WORSE}", file=sys.stderr)
    return EXIT_WORSE


def _dry_run_text(plan: SweepPlan) -> str:
    found = dry_run(plan)
    c = found.calls
    lines = [f"{len(plan.cells)} cells; baseline {plan.baseline}; primary {plan.primary}; alpha {plan.alpha:g}",
             *(f"  {cell.label}" for cell in plan.cells),
             f"embedding texts: {c.embed_texts} distinct, {c.embed_cached} cached, {c.embed_needed} to embed",
             f"chat calls: {c.chat_calls} distinct, {c.chat_cached} cached, {c.chat_needed} to make"]
    if found.not_counted:
        lines.append(f"not counted (not the chatbot system): {', '.join(found.not_counted)}")
    return "\n".join(lines)
