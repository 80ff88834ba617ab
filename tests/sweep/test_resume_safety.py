"""Issue #19 item 17: `sweep --resume` never clears a cell another process holds (a real process holds the cell's
lock), and resumes from the definition saved in sweep.json when the sweep file is gone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from harness.cli import main
from harness.runs import read_manifest, read_rows
from tests.conftest import HANDBOOK, sample_cases

HOLD = ("import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\ntime.sleep(120)\n")


def _interrupted_sweep(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A finished two-cell offline sweep turned into one stopped before its second cell wrote anything."""
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text("chunk-size = [800, 2000]\n")
    assert main(["sweep", str(sweep_file), "--offline", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                 "--k", "1", "2", "--out", str(tmp_path / "sweeps")]) == 0
    [sweep_dir] = list((tmp_path / "sweeps").iterdir())
    manifest = json.loads((sweep_dir / "sweep.json").read_text())
    (sweep_dir / "sweep.json").write_text(json.dumps(manifest | {"status": "incomplete"}))
    cell = sweep_dir / "chunk-size=2000"
    shutil.rmtree(cell)
    cell.mkdir()
    (cell / ".lock").write_text("")
    return sweep_file, sweep_dir, cell


def test_resume_leaves_a_cell_whose_lock_another_process_holds(tmp_path, capsys):
    _, sweep_dir, cell = _interrupted_sweep(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(cell / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        assert main(["sweep", "--resume", str(sweep_dir)]) == 1
        assert "is being written by" in capsys.readouterr().err
        assert cell.is_dir() and (cell / ".lock").exists() and not (cell / "rows.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    assert main(["sweep", "--resume", str(sweep_dir)]) == 0  # the holder is gone: the cell is abandoned, rerun
    assert read_manifest(cell).status == "complete" and len(read_rows(cell)) == 21


def test_resume_works_from_sweep_json_when_the_sweep_file_is_gone(tmp_path, capsys):
    sweep_file, sweep_dir, cell = _interrupted_sweep(tmp_path)
    sweep_file.unlink()
    assert main(["sweep", "--resume", str(sweep_dir)]) == 0, capsys.readouterr().err
    assert read_manifest(cell).status == "complete"
    assert json.loads((sweep_dir / "sweep.json").read_text())["status"] == "complete"
