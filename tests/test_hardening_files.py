"""Issue #19 item 12: a link or special file planted in a run folder is refused, never written through."""

from __future__ import annotations

import os

import pytest

from chatbot.store import UnsafeFile, atomic_write_text, open_regular
from harness.cli import main
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
