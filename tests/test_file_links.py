"""Issue #19 item 12: a link or special file planted in a run folder is refused, never written through; issue #27
item 9: an interrupted atomic write leaves no temporary file behind for long, and a linked rows.jsonl says so."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from harness.cli import main
from pdfrag.safe_files import UnsafeFile, atomic_write_text, open_regular
from tests.conftest import SAMPLE_DOCS, sample_cases


@pytest.fixture
def offline_run(tmp_path):
    assert main(["run", "--offline", "--docs", str(SAMPLE_DOCS / "handbook.pdf"), "--cases", sample_cases(tmp_path),
                 "--out", str(tmp_path / "out")]) in (0, 3)
    return next((tmp_path / "out").iterdir())


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    return path


@pytest.mark.parametrize("name", [".lock", "rows.jsonl"])
def test_resume_refuses_a_symlink_in_the_run_folder_and_leaves_its_target_alone(offline_run, victim, name, capsys):
    manifest = offline_run / "manifest.json"  # as a killed run leaves it, with rows still to write
    manifest.write_text(manifest.read_text().replace('"status": "complete"', '"status": "incomplete"'))
    rows = (offline_run / "rows.jsonl").read_text().splitlines(keepends=True)
    if name == "rows.jsonl":  # rows a resume would read, then append to
        victim.write_text("".join(rows[:10]))
    before = victim.read_text()
    (offline_run / name).unlink(missing_ok=True)
    (offline_run / name).symlink_to(victim)
    assert main(["run", "--resume", str(offline_run)]) == 2
    err = capsys.readouterr().err
    assert f"{offline_run / name} is a symbolic link" in err and "Remove it" in err
    assert victim.read_text() == before


def test_review_import_refuses_a_symlinked_lock(offline_run, victim, tmp_path, capsys):
    sheet = tmp_path / "sheet.csv"
    assert main(["review", str(offline_run), "--export", str(sheet), "--reviewer", "ann"]) == 0
    (offline_run / ".lock").unlink(missing_ok=True)
    (offline_run / ".lock").symlink_to(victim)
    code = main(["review", str(offline_run), "--import", str(sheet), "--reviewer", "ann"])
    assert code == 2 and "is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "precious\n"


def test_a_fifo_or_hard_link_is_refused_at_once(tmp_path, victim):
    fifo = tmp_path / ".lock"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFile, match="not a regular file"):
        open_regular(fifo, "a+", encoding="utf-8")  # would block forever on a plain open()
    os.link(victim, tmp_path / "rows.jsonl")
    with pytest.raises(UnsafeFile, match="hard link"):
        open_regular(tmp_path / "rows.jsonl", "w", encoding="utf-8")
    assert victim.read_text() == "precious\n"


def test_an_atomic_write_replaces_a_link_and_ignores_a_planted_temporary_link(tmp_path, victim):
    target = tmp_path / "summary.json"
    target.symlink_to(victim)
    (tmp_path / f".summary.json.{os.getpid()}.tmp").symlink_to(victim)
    atomic_write_text(target, "{}\n")
    assert not target.is_symlink() and target.read_text() == "{}\n"
    assert victim.read_text() == "precious\n"


# -- issue #27 item 9: temporary files of interrupted writes, and rows.jsonl as a link -------------------------


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_an_atomic_write_that_fails_leaves_no_temporary_file_and_the_old_file(tmp_path, monkeypatch, failure):
    target = tmp_path / "manifest.json"
    target.write_text("old\n")

    def fails(fd: int) -> None:
        raise failure

    monkeypatch.setattr(os, "fsync", fails)  # a full disk shows at the latest when the data is synced
    with pytest.raises(type(failure)):
        atomic_write_text(target, "new\n" * 1000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"] and target.read_text() == "old\n"


def test_temporary_files_a_killed_process_left_are_removed_by_the_next_run_of_the_folder(offline_run, capsys):
    dead, alive = _dead_pid(), os.getppid()
    left = [offline_run / f".{name}.{dead}.tmp" for name in ("manifest.json", "summary.json", "rows.jsonl")]
    in_flight = offline_run / f".summary.json.{alive}.tmp"  # another process's write, still running
    for path in (*left, in_flight):
        path.write_text("")
    assert main(["review", str(offline_run), "--apply"]) == 0  # takes the run's lock
    assert not any(p.exists() for p in left) and in_flight.exists()


def test_the_next_write_of_a_file_removes_what_a_killed_write_of_it_left(tmp_path):
    dead = _dead_pid()
    target = tmp_path / "cases.reviews.jsonl"
    stale, other = tmp_path / f".{target.name}.{dead}.tmp", tmp_path / f".other.jsonl.{dead}.tmp"
    stale.write_text("")
    other.write_text("")
    atomic_write_text(target, "{}\n")
    assert not stale.exists() and other.exists()  # only that file's leftovers: the folder is the user's


@pytest.mark.parametrize("command", [["report"], ["export", "--csv", "-"], ["review", "--apply"]])
def test_rows_jsonl_as_a_link_is_said_to_be_one_not_a_bad_row(offline_run, victim, command, capsys):
    rows = offline_run / "rows.jsonl"
    rows.unlink()
    rows.symlink_to(victim)  # the victim is no rows file: read through, it would be "not a result row"
    argv = [command[0], str(offline_run), *command[1:]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{rows} is a symbolic link" in err and "not a result row" not in err
    assert victim.read_text() == "precious\n"
