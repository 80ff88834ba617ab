"""The harness's exceptions, in one place. Each is a `RagError` (the CLIs map those to exit codes); bad input is
pdfrag's `InputError` (exit 2), re-exported here: harness code takes `InputError` and `RagError` from this
module. What goes wrong with a model server is the model-server seam's own (`pdfrag.errors`: ServerUnreachable,
ModelMissing, ...), imported from there by the few modules that tell those apart."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from pdfrag.errors import InputError, RagError, ServerUnreachable
from pdfrag.terminal import stop_exit_code, stopped_how

__all__ = ["EXIT_JUDGE_REFUSED", "InputError", "JudgeRefused", "RagError", "RunLocked", "RunStopped", "SweepStopped",
           "SystemDown", "command", "shell_words", "stop_code"]

EXIT_JUDGE_REFUSED = 6  # --judged-passed: the judge has not earned its say (5 is --fail-if-worse, 3 and 4 are run's)


def command(*words: str | os.PathLike[str]) -> str:
    """A command printed for a user to copy: `rag-eval WORD…`, every word quoted by `shlex.quote` (plain words
    such as `report` or `--csv` stay as they are). A run folder or label can hold anything a file name can
    (`res $(touch PWNED) ; x`); every command the harness prints (after a run or a score, how to resume, in a
    report, in failed.txt) is built here, so pasted into bash it runs `rag-eval` with those words and nothing else."""
    return shell_words("rag-eval", *words)


def shell_words(*words: str | os.PathLike[str]) -> str:
    """`words` joined for a shell, each quoted by `shlex.quote`: a part of a command to copy (`command` builds
    the whole one)."""
    return " ".join(shlex.quote(os.fspath(w)) for w in words)


class RunLocked(RagError):
    """Another process holds the run directory."""


class JudgeRefused(RagError):
    """`--judged-passed` asked a judge to fill in `passed` and it has not earned that: too few claims shared with
    people, kappa's interval below the floor, or runs judged by different judges. The message gives the numbers."""

    exit_code = EXIT_JUDGE_REFUSED


class SystemDown(RagError):
    """The system cannot answer any question now (its server is gone): the run stops and can be resumed."""


def stop_code(cause: BaseException) -> int:
    """The exit code of a run or sweep that `cause` stopped: 130 for Ctrl-C (143 for SIGTERM, 129 for SIGHUP), else
    the cause's own (1 if none)."""
    return stop_exit_code(cause) if isinstance(cause, KeyboardInterrupt) else getattr(cause, "exit_code", 1)


class RunStopped(RagError):
    """The run ended early (server gone, Ctrl-C, a bug); its directory holds whole rows and can be resumed."""

    def __init__(self, run_dir: Path, written: int, total: int, cause: BaseException):
        self.run_dir, self.cause = run_dir, cause
        self.exit_code = stop_code(cause)
        what = stopped_how(cause) if isinstance(cause, KeyboardInterrupt) else f"stopped: {cause}"
        server = "; --host may name another server" if isinstance(cause, ServerUnreachable) else ""
        super().__init__(f"run {what}\n{written} of {total} rows are saved in {run_dir}; finish it with:\n"
                         f"  {command('run', '--resume', run_dir)}  (with the same settings{server})")


class SweepStopped(RagError):
    """A cell's run stopped early; the sweep directory keeps every finished cell and can be resumed."""

    def __init__(self, sweep_dir: Path, cell_label: str, cause: BaseException):
        """`cause`: the cell's RunStopped, or Ctrl-C before its run had a directory (reading, index build)."""
        self.sweep_dir = sweep_dir
        self.cause = cause.cause if isinstance(cause, RunStopped) else cause
        self.exit_code = stop_code(self.cause)
        why = stopped_how(self.cause) if isinstance(self.cause, KeyboardInterrupt) else str(self.cause)
        super().__init__(f"sweep stopped in cell {cell_label}: {why}\nfinished cells are kept in "
                         f"{sweep_dir}; finish the sweep with:\n  {command('sweep', '--resume', sweep_dir)}")
