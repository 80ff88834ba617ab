"""`rag-eval run` (and `python evaluate_rag.py`): evaluate labelled cases end to end."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pdfrag.errors import ServerUnreachable
from pdfrag.terminal import ProgressBar, Stages, say

from ..cases import describe_selection
from ..chart import fmt
from ..errors import EXIT_JUDGE_REFUSED, InputError, command
from ..evaluate import prepare, run_evaluation
from ..judged.standing import judge_refusal
from ..metrics.registry import parse_metric
from ..report.row_warnings import count_warnings, warning_lines
from ..runs import read_manifest, read_rows
from ..settings import resolve_noting
from ..sweep.dry import count_calls
from ..systems import traits_for
from .common import dry_run_text, render_summary
from .flags import add_base_args, given_flags

EXIT_BELOW_THRESHOLD = 3
EXIT_ALL_ERRORED = 4  # a dead setup must not pass CI


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="evaluate labelled cases end to end (same as python evaluate_rag.py)",
                       description="Rebuild a fresh index, answer every case through the real answer path, and "
                                   "write rows, manifest and summary under --out.")
    add_run_args(p)
    p.set_defaults(func=run)


def add_run_args(p: argparse.ArgumentParser) -> None:
    """Every flag defaults to None so that a --config file can fill what was not given; the help shows the
    defaults from the code (RunSettings and the chatbot's settings)."""
    p.add_argument("--config", help="a TOML file of these settings (flags given here win)")
    g = add_base_args(p)
    g.add_argument("--resume", metavar="RUN_DIR",
                   help="finish an interrupted run (its saved settings are used; changed inputs are refused)")
    g.add_argument("--rerun-failed", metavar="RUN_DIR",
                   help="a new run that asks only the errored cases of RUN_DIR again (its settings are used) and "
                        "carries its other rows over")
    g.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                   help=f"exit {EXIT_BELOW_THRESHOLD} when a mean is below VALUE (repeatable), e.g. recall@4=0.8")
    g.add_argument("--dry-run", action="store_true",
                   help="check the labels, count the chat and embedding calls the run needs and the cached ones, "
                        "and estimate its wall time; asks the server for its models only")
    g.add_argument("--answer-cache", action="store_true", default=None,
                   help="reuse chat replies and question vectors stored by earlier runs (under --cache-dir; "
                        "sweeps do this by default)")


def run(args: argparse.Namespace) -> int:
    flags = given_flags(args)
    if args.resume and args.rerun_failed:
        raise InputError("--resume finishes a run, --rerun-failed starts a new one from a finished run: give one")
    source = args.resume or args.rerun_failed
    saved = read_manifest(source).settings.to_json() if source else None
    settings, notes = resolve_noting(flags, args.config, base=saved)
    for note in notes:
        say(f"note: {note}", file=sys.stderr)
    thresholds = _thresholds(args.fail_under, settings.k)
    if args.dry_run:
        _, cases, selection = prepare(settings)
        say(f"system {settings.system}: {len(cases)} cases x {settings.repeat} repeat(s)"
              + (f"; selected {describe_selection(selection)}" if selection else ""))
        say(dry_run_text(count_calls([(settings.label or "run", settings)]), settings,
                           args.assume_seconds_per_call))
        return 0
    try:
        with second_interrupt_exits(), Stages(lambda stage: _bar(stage, quiet=bool(args.quiet))) as progress:
            result = run_evaluation(settings, progress=progress, argv=sys.argv, resume=args.resume,
                                    status=lambda message: say(message, file=sys.stderr, flush=True),
                                    rerun_of=args.rerun_failed)
    except ServerUnreachable as exc:  # before any row: no server at all
        if traits_for(settings.system).uses_model_servers:
            raise type(exc)(f"{exc}\n{_no_server_hint(args.resume)}") from exc
        raise
    summary = result.summary
    for warning in result.manifest.system.warnings:
        say(f"warning: {warning}", file=sys.stderr)
    for doc, pages in result.manifest.collection.empty_pages.items():
        say(f"warning: {doc} pages {', '.join(map(str, pages))} have no text layer (scanned?); a text-only "
              "system cannot answer from them", file=sys.stderr)
    rerun = result.manifest.rerun_of
    if rerun:
        say(f"rerun of {rerun.run}: {summary.rows - rerun.carried} errored row(s) asked again, "
            f"{rerun.carried} carried over", file=sys.stderr)
    say(render_summary(summary, result.manifest))
    chosen = result.manifest.selection.to_json()
    if chosen:
        say(f"selected: {describe_selection(chosen)}")
    print_row_warnings(result.run_dir, summary.rows)
    say(f"\nrun written to {result.run_dir}\nsee it: {command('report', result.run_dir)}")
    failed = [f"{name} mean {fmt(summary.mean(name))} < {value}"
              for name, value in thresholds if (summary.mean(name) or 0.0) < value]
    if summary.errored:
        say(f"warning: {summary.errored} of {summary.rows} rows errored; their metrics are "
              "missing from the means", file=sys.stderr)
        if thresholds:  # a gate cannot pass on rows it could not score
            failed.append(f"{summary.errored} rows errored")
    for line in failed:
        say(f"below threshold: {line}", file=sys.stderr)
    if summary.rows and summary.errored == summary.rows:
        say(f"error: every one of the {summary.rows} rows errored; nothing was measured (see the rows' "
              "`error` field)", file=sys.stderr)
        return EXIT_ALL_ERRORED
    refused = None if result.judge is None else judge_refusal([("this run", result.judge)], compared=False)
    if refused is not None:  # the run is complete, with the people's `passed`; CI must not read it as the judge's
        say(f"error: {refused}\nthe run is complete with the people's `passed`; once the judge earns it, "
            f"`{command('review', result.run_dir, '--apply')}` (or any re-score) switches it", file=sys.stderr)
        return EXIT_JUDGE_REFUSED
    return EXIT_BELOW_THRESHOLD if failed else 0


def _bar(stage: str, *, quiet: bool) -> ProgressBar:
    return ProgressBar(stage, reused="from cache" if stage == "embedding" else "done before",
                       delay_s=1.0 if stage == "reading PDFs" else 0.0, quiet=quiet)


def _no_server_hint(resumed: str | None) -> str:
    """What to do when no model server answers: a resumed run may finish on another server (the host decides no
    row), and `--offline` is another system."""
    if resumed:
        return (f"(resuming: the server may change; `{command('run', '--resume', resumed, '--host', 'URL')}` "
                "finishes the run on "
                "another one, --host once per server; `--offline` evaluates a BM25 + extractive baseline instead, "
                "as a new run: it is a different system)")
    return "(no model server? `--offline` evaluates a BM25 + extractive baseline instead; it is a different system)"


def print_row_warnings(run_dir: Path, total_rows: int) -> None:
    """After the summary: the rows' warnings counted by kind, with the likely cause of one most rows share."""
    lines = warning_lines(count_warnings(read_rows(run_dir)), total_rows)
    if lines:
        say("\n" + "\n".join(lines))


@contextmanager
def second_interrupt_exits() -> Iterator[None]:
    """The first Ctrl-C stops the run as usual (rows kept, manifest written, the resume command printed); from
    then on, until the process ends, another Ctrl-C exits at once with 130 and no traceback (rows already written
    are whole: each is flushed as it is written)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def again(signum: int, frame: object) -> None:
        os.write(2, b"\ninterrupted again: exiting now; the rows written so far are kept\n")
        os._exit(130)

    def first(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, again)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:  # after a Ctrl-C, the next one must still exit at once, up to the process's end
        if signal.getsignal(signal.SIGINT) is first:
            signal.signal(signal.SIGINT, previous)


def _thresholds(specs: list[str], ks: tuple[int, ...]) -> list[tuple[str, float]]:
    out = []
    for spec in specs:
        name, sep, value = spec.partition("=")
        try:
            out.append((parse_metric(name.strip(), ks), float(value)))
        except ValueError as exc:
            raise InputError(f"--fail-under {spec!r}: {exc if sep else 'expected METRIC=VALUE'}") from exc
        if not 0.0 <= out[-1][1] <= 1.0:
            raise InputError(f"--fail-under {spec!r}: every metric lies in [0, 1]; give a value in that range")
    return out
