"""Argument types, flags and exit codes several sub-commands share.

Standard library only at import (`rag-eval report --help` and `compare --help` import this): the run settings'
flags import the settings and the chatbot's flags when a parser that carries them is built."""

from __future__ import annotations

import argparse

from ..errors import EXIT_JUDGE_REFUSED

__all__ = ["EXIT_WORSE", "LABEL_CHARS", "add_base_args", "add_chunk_flags", "add_quiet", "add_selection_args",
           "given_flags", "positive_int", "run_label"]

EXIT_WORSE = 5  # --fail-if-worse: B is significantly worse than A (3, 4: rag-eval run; 6: a judge refused)
LABEL_CHARS = 200  # the run's folder is <UTC time>-<label>: a file name holds at most 255 bytes


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run_label(text: str) -> str:
    """An argparse type: a run's label, short enough to be part of its folder's name."""
    if len(text) > LABEL_CHARS:
        raise argparse.ArgumentTypeError(f"{len(text)} characters; give at most {LABEL_CHARS} (the label is part "
                                         "of the run folder's name)")
    return text


def add_quiet(p: argparse._ActionsContainer) -> None:
    """`--quiet`: no progress on stderr, neither the terminal's bar nor the log's lines."""
    p.add_argument("--quiet", action="store_true", default=None,
                   help="no progress: neither the bar on a terminal nor, when stderr is a file or pipe, the line "
                        "at the start and every 5 s (errors, warnings and results are still shown)")


def add_base_args(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The run settings as flags (shared by `rag-eval run` and `rag-eval sweep`); returns the "the run" group
    for command-specific flags. `--host` may be given once per server."""
    from chatbot.cli import add_answer_args, add_server_args

    from ..settings import RunSettings
    from ..sweep.estimate import DEFAULT_SECONDS_PER_CALL

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
    add_chunk_flags(p)
    add_answer_args(p, fill=False)
    return run


def add_chunk_flags(p: argparse.ArgumentParser) -> None:
    """The chatbot's chunking flags (run, sweep, check: the label check fits quotes to its chunks), unfilled so
    that a --config file can give them."""
    from chatbot.cli import add_chunk_args

    add_chunk_args(p, fill=False)


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
    from ..settings import host_flags

    flags = {k: v for k, v in vars(args).items() if k not in ("config", "fail_under", "func", "command", "resume",
                                                              "rerun_failed", "assume_seconds_per_call", "dry_run",
                                                              "quiet", *skip)}
    return flags | host_flags(args.host)
