"""Issue #43: every command the harness prints for copying is quoted, so pasting it into bash runs only rag-eval.

The run folder is named `res $(touch PWNED) ; x`. Each printed command (after a run, after a score, in failed.txt,
in a report, in the message that says how to resume) is cut from its line as a user would select it — the longest
start of the text after `rag-eval` that bash can parse, or what stands between backticks — and pasted into bash
with `rag-eval` a function that only writes down its arguments. No PWNED file may appear, and the run folder
must arrive as one argument, whole.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import harness.saved.to_run as saved_to_run
from harness.cli import main
from harness.errors import RunStopped
from tests.conftest import HANDBOOK, sample_cases

EVIL = "res $(touch PWNED) ; x"
WORKSHOP = Path(__file__).resolve().parent.parent / "sample_docs" / "workshop" / "cases.csv"
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def _parses(text: str) -> bool:
    return subprocess.run([BASH, "-n", "-c", text], capture_output=True).returncode == 0


def printed_commands(text: str) -> list[str]:
    """Every `rag-eval …` command in `text`, cut as a user would copy it."""
    found = []
    for line in text.splitlines():
        for match in re.finditer(r"(?<![\w-])(`?)rag-eval ", line):
            rest = line[match.start() + len(match.group(1)):]
            if match.group(1):  # between backticks
                found.append(rest.split("`", 1)[0])
                continue
            cuts = [i for i, ch in enumerate(rest) if ch in " )"] + [len(rest)]
            found.append(next(rest[:i] for i in reversed(cuts) if _parses(rest[:i])))
    return found


def _paste(command: str, where: Path) -> list[str]:
    """Run `command` in bash in `where`, `rag-eval` being a function that writes its arguments; the arguments."""
    script = 'rag-eval() { printf "%s\\n" "$@" >> args.txt; }\n' + command
    subprocess.run([BASH, "-c", script], cwd=where, capture_output=True, timeout=30)
    args = where / "args.txt"
    return args.read_text().splitlines() if args.exists() else []


def _check_all(commands: list[str], run_dir: Path, tmp_path: Path) -> None:
    assert commands
    for n, command in enumerate(commands):
        where = tmp_path / f"paste-{n}"
        where.mkdir()
        args = _paste(command, where)
        assert not list(tmp_path.rglob("PWNED")), command
        assert args, command  # rag-eval ran
        if "PWNED" in command:  # a command naming the folder got it whole, as one word
            assert any(a.startswith(str(run_dir.parent)) for a in args), (command, args)


@pytest.fixture
def evil(tmp_path) -> Path:
    return tmp_path / EVIL


def test_commands_after_a_score_and_in_failed_txt_and_the_report_run_only_rag_eval(evil, tmp_path, capsys,
                                                                                     monkeypatch):
    monkeypatch.setattr(saved_to_run, "FAILED_SHOWN", 1)  # so failed.txt points to the export for the rest
    assert main(["score", "--cases", str(WORKSHOP), "--out", str(evil), "--workers", "1"]) == 0
    [run_dir] = evil.iterdir()
    assert main(["report", str(run_dir), "--limit", "1"]) == 0  # past the limit: the export command
    printed = capsys.readouterr()
    failed = (run_dir / "failed.txt").read_text()
    page = html.unescape(re.sub(r"<[^>]+>", "\n", (run_dir / "report.html").read_text()))
    commands = printed_commands(printed.out + printed.err)
    assert printed_commands(failed) and printed_commands(page)
    _check_all(commands + printed_commands(failed) + printed_commands(page), run_dir, tmp_path)


def test_the_command_after_a_run_and_the_resume_command_run_only_rag_eval(evil, tmp_path, capsys):
    assert main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", str(sample_cases(tmp_path)),
                 "--out", str(evil)]) == 0
    [run_dir] = evil.iterdir()
    commands = printed_commands(capsys.readouterr().out)
    stopped = str(RunStopped(run_dir, 3, 21, KeyboardInterrupt()))
    assert "--resume" in stopped
    _check_all(commands + printed_commands(stopped), run_dir, tmp_path)


def test_an_unquoted_command_would_have_run_the_injection(evil, tmp_path):
    """The check above can fail: the same folder, printed as before, creates PWNED."""
    where = tmp_path / "paste"
    where.mkdir()
    [command] = printed_commands(f"see it: rag-eval report {evil}/20261203T120000Z-score")
    _paste(command, where)
    assert (where / "PWNED").exists()
