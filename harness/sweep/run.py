"""`rag-eval sweep`: run every cell of a sweep plan as a normal run, then rank the cells on one leaderboard.

A sweep directory holds:
- `sweep.json`: the plan (cells, axes, baseline, primary, alpha, tags), the sweep file's hash, the --grid
  arguments, the base flags, the command, and per cell its run directory and status;
- one run directory per cell, named by the cell's slug (`compare`, `report`, `rescore`, `review` and
  `run --resume` work on each as on any run);
- `leaderboard.json` / `.md` / `.svg` / `.html` once every cell is complete.

Reuse: every cell uses the same cache directory, so a chunk text is embedded once per embedding model across the
sweep (the vector cache is keyed by model digest, prefix and text) and, with the answer cache (on by default in a
sweep), a chat call made by one cell, or by an earlier sweep, is never made again. A cell's latency on the
leaderboard is the server's own `total_ms` of the reply (stored with a cached reply, so a cached cell reports the
time it really took); for a system that reports none, the row's wall time.

Cells run in plan order, two at a time when every cell is the bundled chatbot: they share each server's
`--workers` slots, so the servers stay busy while one cell builds its index or finishes its last cases.

Resuming: cells whose run is complete are kept, the interrupted cell's run is resumed (`run_evaluation(resume=)`),
the others run. A sweep file whose content changed, different --grid arguments, or different base flags (other
than those that cannot change a row: workers, hosts, timeouts, retries) are refused.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pdfrag.page_cache import PageCache
from pdfrag.pdfs import Document, read_documents
from pdfrag.safe_files import atomic_write_text

from ..errors import InputError, JudgeRefused, RunStopped, SweepStopped, command
from ..evaluate import Progress, fresh_manifest, prepare, run_evaluation, setup_changes
from ..judged.standing import judge_agreement, judge_note, judge_prompt_sha256, judge_refusal, judge_standing
from ..metrics.registry import JUDGED_METRICS, higher_is_better
from ..records import Row
from ..runs import LOCK, MANIFEST, RunLock, new_run_dir, read_json, read_manifest, read_rows, utc_now
from ..summary import errored_value, per_case_means
from ..systems import traits_for
from .leaderboard import CellResults, CellSelection, Leaderboard, build_leaderboard, select_and_confirm
from .leaderboard_files import write_leaderboard
from .leaderboard_html import write_leaderboard_html
from .plan import Cell, SweepPlan, load_sweep

__all__ = ["FREE_FLAGS", "SWEEP_FORMAT", "SWEEP_MANIFEST", "SweepResult", "SweepStopped", "cell_results",
           "leaderboard_of", "read_sweep_manifest", "resume_plan", "run_sweep"]

SWEEP_MANIFEST = "sweep.json"
SWEEP_FORMAT = 1
# Base flags that may differ when a sweep is resumed: they decide how fast, not what a row says.
FREE_FLAGS = frozenset({"workers", "host", "hosts", "timeout", "retries", "backoff", "answer_cache"})
CellHook = Callable[[int, int, Cell, str], None]  # (number from 1, cells, cell, "start" | "kept" | "resume" | "done")
CellProgress = Callable[[int, str, int, int], None]  # (cell number from 1, stage, done, total)
CELLS_AT_ONCE = 2  # enough to hide one cell's setup and tail behind another's answers


@dataclass(frozen=True)
class SweepResult:
    sweep_dir: Path
    plan: SweepPlan
    run_dirs: tuple[Path, ...]  # one per cell, in plan order
    board: Leaderboard
    selection: CellSelection | None
    files: dict[str, Path]


def _jsonable(flags: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(flags.items()) if v is not None}


def run_sweep(plan: SweepPlan, flags: Mapping[str, Any], *, grid: Sequence[str] = (),
              resume: str | Path | None = None, progress: Progress | None = None, on_cell: CellHook | None = None,
              argv: list[str] | None = None, cell_progress: CellProgress | None = None) -> SweepResult:
    """Run (or, with `resume`, finish) every cell, then write the leaderboard. `flags` are the base run flags
    given (field names, None = not given) as passed to `load_sweep`; `grid` the --grid arguments. `progress`
    hears every cell's stages; `cell_progress` the same with the cell's number first."""
    if resume is None:
        first = plan.cells[0].settings
        sweep_dir = new_run_dir(first.out, first.label or (Path(plan.source).stem if plan.source else "sweep"))
        _write_manifest(sweep_dir, _manifest(plan, flags, grid, argv))
    else:
        sweep_dir = Path(resume)
        _check_same(sweep_dir, plan, flags, grid)
    run_dirs = _run_cells(sweep_dir, plan, progress, on_cell, argv, cell_progress)
    _refuse_unearned_judges(sweep_dir, plan, run_dirs)
    board, selection = leaderboard_of(plan, run_dirs)
    files = write_leaderboard(sweep_dir, board, selection)
    files["html"] = write_leaderboard_html(sweep_dir / "leaderboard.html", board, selection, plan)
    manifest = read_json(sweep_dir / SWEEP_MANIFEST) | {"status": "complete", "ended_at": utc_now()}
    _write_manifest(sweep_dir, manifest)
    return SweepResult(sweep_dir, plan, tuple(run_dirs), board, selection, files)


def _run_cells(sweep_dir: Path, plan: SweepPlan, progress: Progress | None, on_cell: CellHook | None,
               argv: list[str] | None, cell_progress: CellProgress | None = None) -> list[Path]:
    """Run the cells in plan order, two at a time when every cell is the chatbot: the servers' worker slots are
    shared (harness/systems/chatbot.py), so one cell's answers fill the slots while the other builds its index
    or waits for its last cases, and no server gets more requests at once than --workers. The first cell that
    stops stops the sweep: cells not started are not started, running ones stop at their next row."""
    stop, first = threading.Event(), []  # first: the failure that stopped the sweep (not the stops it caused)
    at_once = CELLS_AT_ONCE if all(traits_for(c.settings.system).uses_model_servers for c in plan.cells) else 1

    def watched(number: int) -> Progress:
        def hear(stage: str, done: int, total: int) -> None:
            if stop.is_set():
                raise KeyboardInterrupt  # the cell's run stops resumably, like Ctrl-C
            if progress:
                progress(stage, done, total)
            if cell_progress:
                cell_progress(number, stage, done, total)
        return hear

    shelf = _Documents()
    _check_all_labels(plan, shelf, progress)

    def one(number: int, cell: Cell) -> Path:
        try:
            return _run_cell(sweep_dir, plan, cell, number, watched(number), on_cell, argv, shelf)
        except BaseException as exc:
            if not stop.is_set():
                first.append(exc)
            stop.set()
            raise

    pool = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="sweep-cell")
    futures = [pool.submit(one, n, c) for n, c in enumerate(plan.cells, start=1)]
    try:
        return [f.result() for f in futures]
    except BaseException:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        if first:  # a cell failed on its own: that is the reason, not the stops it caused
            raise first[0] from None
        stopped = [f.exception() for f in futures if f.done() and not f.cancelled()]
        cell_stop = next((e for e in stopped if isinstance(e, SweepStopped)), None)
        if cell_stop is not None:  # Ctrl-C: say how to resume
            raise cell_stop from None
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _check_all_labels(plan: SweepPlan, shelf: _Documents, progress: Progress | None) -> None:
    """The label check of every distinct (documents, cases, chunking, system kind) of the sweep, before any cell
    runs: a quote that one cell's chunk size cuts must not surface hours into the sweep. All problems at once."""
    problems, seen = [], set()
    for cell in plan.cells:
        s = cell.settings
        key = (s.docs, s.cases, s.chunk_size, s.chunk_overlap, traits_for(s.system).label_checks_chunks)
        if key in seen:
            continue
        seen.add(key)
        try:
            prepare(s, documents=shelf.get(s.docs, progress, s.cache_dir))
        except InputError as exc:
            problems.append(f"cell {cell.label}: {exc}")
    if problems:
        raise InputError("the labels do not fit every cell of the sweep; nothing was run:\n" + "\n".join(problems))


class _Documents:
    """Each documents folder read once for the whole sweep (the cells' label checks and indexes share it)."""

    def __init__(self) -> None:
        self._read: dict[str, list[Document]] = {}
        self._lock = threading.Lock()

    def get(self, docs: str, progress: Progress | None, cache_dir: str | None) -> list[Document]:
        with self._lock:
            if docs not in self._read:
                self._read[docs] = read_documents(docs, (lambda d, t: progress("reading PDFs", d, t))
                                                  if progress else None, cache=PageCache.at(cache_dir))
            return self._read[docs]


def _run_cell(sweep_dir: Path, plan: SweepPlan, cell: Cell, number: int, progress: Progress | None,
              on_cell: CellHook | None, argv: list[str] | None, shelf: _Documents) -> Path:
    run_dir = sweep_dir / cell.slug
    settings = dataclasses.replace(cell.settings, label=cell.label)
    state = _cell_state(run_dir)
    if on_cell:
        on_cell(number, len(plan.cells), cell, state)
    if state == "kept":  # a finished cell counts only if nothing that decides its rows changed since
        documents = shelf.get(settings.docs, progress, settings.cache_dir)
        changes = setup_changes(read_manifest(run_dir), fresh_manifest(settings, documents))
        if changes:
            raise InputError(f"{run_dir}: cannot resume the sweep, this finished cell was made with another setup:"
                             "\n  " + "\n  ".join(changes) + "\nstart a new sweep")
        return run_dir
    try:
        run_evaluation(settings, progress=progress, argv=argv, resume=run_dir if state == "resume" else None,
                       run_dir=None if state == "resume" else run_dir,
                       documents=shelf.get(settings.docs, progress, settings.cache_dir))
    except (RunStopped, KeyboardInterrupt) as exc:
        raise SweepStopped(sweep_dir, cell.label, exc) from exc
    if on_cell:
        on_cell(number, len(plan.cells), cell, "done")
    return run_dir


def _cell_state(run_dir: Path) -> str:
    """kept (complete), resume (rows may be saved), or start. A directory a kill left before its manifest was
    written holds no row; it is cleared and the cell starts again."""
    if (run_dir / MANIFEST).exists():
        return "kept" if read_manifest(run_dir).status == "complete" else "resume"
    if run_dir.exists():
        leftovers = [p for p in run_dir.iterdir() if p.name != LOCK]
        if leftovers:
            raise InputError(f"{run_dir}: has files but no manifest.json; move it away and resume again")
        # only a lock nobody holds is abandoned: a process that holds it is starting this cell right now
        lock = RunLock(run_dir).acquire(utc_now())
        try:
            (run_dir / LOCK).unlink(missing_ok=True)
            run_dir.rmdir()
        finally:
            lock.release()
    return "start"


# -- the manifest ---------------------------------------------------------------------------------------------
def _manifest(plan: SweepPlan, flags: Mapping[str, Any], grid: Sequence[str], argv: list[str] | None) -> dict:
    return {"format": SWEEP_FORMAT, "status": "incomplete", "started_at": utc_now(), "command": argv,
            "sha256": plan.sha256, "source": plan.source, "definition": plan.definition, "grid": list(grid),
            "flags": _jsonable(flags),
            "plan": plan.to_dict(), "cells": [{"label": c.label, "slug": c.slug, "run_dir": c.slug}
                                              for c in plan.cells]}


def _write_manifest(sweep_dir: Path, data: dict) -> None:
    atomic_write_text(sweep_dir / SWEEP_MANIFEST, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def read_sweep_manifest(sweep_dir: str | Path) -> dict:
    path = Path(sweep_dir) / SWEEP_MANIFEST
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != SWEEP_FORMAT or "sha256" not in data:
        raise InputError(f"{path}: not a sweep manifest (format {SWEEP_FORMAT}); is {sweep_dir} a sweep directory?")
    return data


def resume_plan(sweep_dir: str | Path, path: str | Path | None, grid: Sequence[str], flags: Mapping[str, Any],
                known_metrics: Sequence[str] | None = None) -> tuple[SweepPlan, dict[str, Any], list[str]]:
    """The plan to resume `sweep_dir` with: the sweep file and --grid given now, or the saved ones when neither
    is given; the saved base flags with the given ones on top. Refuses a changed definition or changed flags."""
    saved = read_sweep_manifest(sweep_dir)
    given = path is not None or bool(grid)
    source = path if given else saved.get("source")
    grid = list(grid) if given else list(saved.get("grid") or [])
    merged = dict(saved.get("flags") or {}) | {k: v for k, v in flags.items() if v is not None}
    # a sweep file that is gone is replaced by the definition saved in sweep.json; no cell limit: once accepted
    gone = not given and source is not None and not Path(source).exists()
    definition = saved.get("definition") if gone else None
    plan = load_sweep(source, grid=grid, flags=merged, known_metrics=known_metrics, max_cells=None,
                      definition=definition)
    _check_same(Path(sweep_dir), plan, merged, grid)
    return plan, merged, grid


def _check_same(sweep_dir: Path, plan: SweepPlan, flags: Mapping[str, Any], grid: Sequence[str]) -> None:
    saved = read_sweep_manifest(sweep_dir)
    problems = []
    if saved["sha256"] != plan.sha256:
        problems.append(f"the sweep definition changed (sweep file {plan.source or 'none'} and --grid "
                        f"{' '.join(grid) or 'none'} hash to {plan.sha256[:12]}, the sweep was started with "
                        f"{saved['sha256'][:12]})")
    old, new = saved.get("flags") or {}, _jsonable(flags)
    for key in sorted((set(old) | set(new)) - FREE_FLAGS):
        if old.get(key) != new.get(key):
            problems.append(f"flag --{key.replace('_', '-')}: {old.get(key)!r} -> {new.get(key)!r}")
    if problems:
        raise InputError(f"{sweep_dir}: cannot resume, the sweep would mix two setups:\n  " + "\n  ".join(problems)
                         + "\nresume with the sweep file and flags it was started with, or start a new sweep")


# -- the leaderboard ------------------------------------------------------------------------------------------
def _refuse_unearned_judges(sweep_dir: Path, plan: SweepPlan, run_dirs: Sequence[Path]) -> None:
    """--judged-passed: no leaderboard until every cell's judge has earned its say over `passed` and every cell is
    judged by the same judge (`harness.judged.standing.judge_refusal`); the finished cells are kept."""
    standings = [(f"cell {c.label}", judge_standing(read_rows(d), floor=c.settings.min_judge_kappa,
                                                    prompt_sha256=judge_prompt_sha256(read_manifest(d))))
                 for c, d in zip(plan.cells, run_dirs) if c.settings.judged_passed]
    refused = judge_refusal(standings, compared=True) if standings else None
    if refused is not None:
        raise JudgeRefused(f"{refused}\nevery cell is kept in {sweep_dir}; judge and calibrate each (rag-eval judge "
                           f"CELL, rag-eval review CELL --calibrate 40), then write the leaderboard with: "
                           f"{command('sweep', '--resume', sweep_dir)}")



def cell_results(label: str, rows: Sequence[Row], primary: str) -> CellResults:
    """A cell's per-case primary metric, latency (the server's total_ms, else the row's wall time) and tokens,
    each the mean over the case's repeats. An errored case counts 0 on the primary metric (`errored_value`, the
    rule `rag-eval compare` uses too): summaries leave errors out of their means, but a cell that errors on the
    hard cases must not look better for it."""
    def latency(row: Row) -> float | None:
        value = row.usage.get("total_ms")
        return value if isinstance(value, (int, float)) else row.usage.get("elapsed_ms")

    def tokens(row: Row) -> float | None:
        prompt, output = row.usage.get("prompt_tokens"), row.usage.get("output_tokens")
        if not isinstance(prompt, int) or not isinstance(output, int):
            return None  # the answerer reported no token counts for this row
        return float(prompt + output)

    return CellResults(label, per_case_means((r.case_id, errored_value(r, primary, primary=True)) for r in rows),
                       per_case_means((r.case_id, latency(r)) for r in rows),
                       per_case_means((r.case_id, tokens(r)) for r in rows),
                       frozenset(r.case_id for r in rows if r.errored))


def _with_judges(board: Leaderboard, plan: SweepPlan, all_rows: Sequence[Sequence[Row]]) -> Leaderboard:
    """Each entry with its judge's agreement with people, when the primary metric reads judged verdicts (a judged
    metric, or `passed` under --judged-passed)."""
    judged = [plan.primary in JUDGED_METRICS or (plan.primary == "passed" and c.settings.judged_passed)
              for c in plan.cells]
    if not any(judged):
        return board
    notes = {c.label: judge_note(None if (a := judge_agreement(rows)) is None else a.summary_json())
             for c, rows, on in zip(plan.cells, all_rows, judged) if on}
    return replace(board, entries=tuple(replace(e, judge=notes.get(e.label)) for e in board.entries))


def leaderboard_of(plan: SweepPlan, run_dirs: Sequence[Path]) -> tuple[Leaderboard, CellSelection | None]:
    """Every cell against the baseline on all cases; with select-on/confirm-on, also the selection."""
    all_rows = [read_rows(d) for d in run_dirs]
    cells = [cell_results(c.label, rows, plan.primary) for c, rows in zip(plan.cells, all_rows)]
    baseline = next(c for c in cells if c.label == plan.baseline)
    board = build_leaderboard(baseline, cells, primary=plan.primary, alpha=plan.alpha,
                              higher_is_better=higher_is_better(plan.primary))
    board = _with_judges(board, plan, all_rows)
    if plan.select_on is None or plan.confirm_on is None:
        return board, None
    tags: dict[str, set[str]] = {}
    for row in all_rows[[c.label for c in plan.cells].index(plan.baseline)]:
        tags.setdefault(row.case_id, set()).update(row.tags)
    selection = select_and_confirm(baseline, cells, tags, select_on=plan.select_on, confirm_on=plan.confirm_on,
                                   primary=plan.primary, alpha=plan.alpha,
                                   higher_is_better=higher_is_better(plan.primary))
    return board, selection

