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

from chatbot.cli import add_answer_args, add_chunk_args, add_server_args
from pdfrag.errors import ServerUnreachable
from pdfrag.terminal import ProgressBar, Stages, say

from ..cases import describe_selection
from ..chart import fmt
from ..errors import EXIT_JUDGE_REFUSED, InputError, command
from ..evaluate import prepare, run_evaluation
from ..judged import judge_note, judge_refusal
from ..metrics import JUDGED_METRICS, TWIN_NOTE, describe, is_retrieval, parse_metric, shown_once
from ..records import Manifest, Summary
from ..report.row_warnings import count_warnings, warning_lines
from ..runs import read_manifest, read_rows
from ..settings import RunSettings, host_flags, resolve_noting
from ..sweep.dry import DryRun, count_calls
from ..sweep.estimate import DEFAULT_SECONDS_PER_CALL, embedding_text, estimate
from ..systems import traits_for
from .common import judged_passed_text
from .flags import add_quiet, run_label

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


def add_base_args(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The run settings as flags (shared by `rag-eval run` and `rag-eval sweep`); returns the "the run" group
    for command-specific flags. `--host` may be given once per server."""
    d = RunSettings()
    g = p.add_argument_group("what to evaluate")
    g.add_argument("--system", help=f"chatbot, offline, a plug-in name, package.module:factory, or an http(s):// "
                                    f"address (default {d.system}; see docs/your-system.md)")
    g.add_argument("--offline", action="store_true", default=None,
                   help="same as --system offline: BM25 retrieval and an extractive baseline, no model server")
    g.add_argument("--docs", help=f"PDF file or folder (default {d.docs})")
    g.add_argument("--cases", help=f"cases JSONL (default {d.cases})")
    g.add_argument("--k", type=int, nargs="+",
                   help=f"cut-offs for Hit@k and Recall@k (default {' '.join(map(str, d.k))})")
    add_selection_args(g)
    run = p.add_argument_group("the run")
    run.add_argument("--out", help=f"where run directories go (default {d.out})")
    run.add_argument("--label", type=run_label, help="a name for this run, part of its directory name")
    add_quiet(run)
    run.add_argument("--workers", type=int, help=f"cases answered in parallel, per server (default {d.workers})")
    run.add_argument("--repeat", type=int, help=f"answer each case N times (default {d.repeat})")
    run.add_argument("--assume-seconds-per-call", type=float, metavar="S",
                     help="for --dry-run's wall-time estimate: seconds per chat call (default: the median of the "
                          "newest finished run of the same chat model under --out, else "
                          f"{DEFAULT_SECONDS_PER_CALL:g})")
    run.add_argument("--judged-passed", action="store_true", default=None,
                     help="`passed` reads claim_support_judged (a judge's verdict where no person's exists) once "
                          "the judge earns it: over 30 shared claims, 10 supported and 10 unsupported by people, the "
                          "lower end of kappa's analytic 95%% interval at least --min-judge-kappa and its recall of "
                          "each verdict at least 0.7 (Wilson); recorded in the manifest. Until then exit "
                          f"{EXIT_JUDGE_REFUSED}, with the people's `passed` (docs/judge.md)")
    run.add_argument("--min-judge-kappa", type=float, metavar="K",
                     help="with --judged-passed: the lower end of kappa's analytic 95%% interval the judge must reach "
                          f"(default {d.min_judge_kappa:g}: where 'substantial' agreement begins)")
    add_server_args(p, fill=False, many_hosts=True)
    add_chunk_args(p, fill=False)
    add_answer_args(p, fill=False)
    return run


def add_selection_args(g: argparse._ActionsContainer) -> None:
    """A subset of the cases (run, check, sweep); the manifest records it and compare refuses two selections."""
    g.add_argument("--only-tag", action="append", metavar="NAME",
                   help="only cases carrying this tag (repeatable: any of them)")
    g.add_argument("--only-ids", metavar="@FILE|ID,...",
                   help="only these cases: @FILE, a file of case ids (one a line), or ids separated by commas; a "
                        "bare FILE that exists is read as a file (refused when it is also a list of case ids); "
                        "an empty value is refused")
    pick = g.add_mutually_exclusive_group()
    pick.add_argument("--limit", type=int, metavar="N", help="only the first N cases (after the filters above)")
    pick.add_argument("--sample", type=int, metavar="N",
                      help="only N cases drawn at random with --seed, kept in file order")


def given_flags(args: argparse.Namespace, *, skip: tuple[str, ...] = ()) -> dict:
    """The run settings given as flags (None: not given), `--host` split into host and hosts."""
    flags = {k: v for k, v in vars(args).items() if k not in ("config", "fail_under", "func", "command", "resume",
                                                              "rerun_failed", "assume_seconds_per_call", "dry_run",
                                                              "quiet", *skip)}
    return flags | host_flags(args.host)


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


def dry_run_text(found: DryRun, s: RunSettings, assume: float | None) -> str:
    """The counted calls and the wall-time estimate (the base settings `s` give the slots and the chat model)."""
    c = found.calls
    lines = [f"embedding texts: {c.embed_texts} distinct, {c.embed_cached} cached, {c.embed_needed} to embed",
             f"chat calls: {c.chat_calls} distinct, {c.chat_cached} cached, {c.chat_needed} to make"]
    if found.not_counted:
        lines.append(f"not counted (not the chatbot system): {', '.join(found.not_counted)}")
    slots = s.workers * len(s.servers())
    if found.embedding is not None:
        e = found.embedding
        lines.append(embedding_text(e.chunks_needed, e.seconds_per_chunk, e.chars, e.model))
    lines.append(estimate(c.chat_needed, slots, assume=assume, out=s.out, chat_model=s.chat_model).text())
    return "\n".join(lines)


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


def render_summary(summary: Summary, manifest: Manifest) -> str:
    """The summary as a table: mean, then scored / not applicable / errored counts, then what it means."""
    c = summary.collection
    chunks = (f"{c['chunks']} chunks; top-k {manifest.settings.top_k}" if c.get("chunks")
              else "chunks: the system's own")
    lines = [f"system: {manifest.system.title}",
             f"cases: {summary.rows} rows ({summary.errored} errored), {summary.passes} passed every check; "
             f"collection: {c.get('documents', '?')} documents, {c.get('pages', '?')} pages, {chunks}",
             ""]
    shown = shown_once(list(summary.metrics), lambda x, y: summary.metrics[x] == summary.metrics[y])
    width = max([len("metric"), *(len(label) for _, label in shown)]) + 2
    lines.append(f"{'metric':<{width}}{'mean':>7}{'scored':>8}{'n/a':>6}{'error':>7}  definition")
    for name, label in shown:
        m = summary.metrics[name]
        where = f" [of {c['chunks']} chunks]" if is_retrieval(name) and c.get("chunks") else ""
        lines.append(f"{label:<{width}}{fmt(m.mean):>7}{m.scored:>8}{m.not_applicable:>6}{m.errored:>7}  "
                     f"{describe(name)}{where}")
        if name in JUDGED_METRICS:
            lines.append(f"{'':<{width}}  {judge_note(summary.judge)}")
    if any(name != label for name, label in shown):
        lines.append(TWIN_NOTE)
    if summary.by_origin:  # the model that drafted a case may be the one answering it: never pool them silently
        lines += ["", "drafted and hand-written cases apart (mean, scored):"]
        for name in ("passed", "hit@1", "facts", "behaviour"):
            parts = [f"{o} {fmt(m[name].mean)} ({m[name].scored})" for o, m in summary.by_origin.items() if name in m]
            lines.append(f"  {name:<12}" + "; ".join(parts))
    if summary.repeat_stability:
        flips = [f"{n} {v['flipped']}/{v['cases']}" for n, v in summary.repeat_stability.items() if v["cases"]]
        lines += ["", "verdicts that changed between repeats (cases flipped / cases): " + ", ".join(flips)]
    judged = judged_passed_text(summary)
    if judged:
        lines += ["", judged]
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.answer_statuses.items()))
    review = summary.human_claim_review
    lines += ["", f"answer statuses: {statuses}",
              f"human claim review: {review['pending']} pending, {review['reviewed']} reviewed "
              "(`rag-eval review RUN`)"]
    return "\n".join(lines)
