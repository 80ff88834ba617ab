"""`rag-eval score --workers 2` stopped from outside, as a process: SIGTERM (what `timeout`, CI runners and
`docker stop` send) and SIGHUP at several moments, and a worker killed mid-run. Whatever the moment, the command
ends with one line, no process it started is left (the fork server, the workers, the resource tracker: the whole
session of the command is watched), and nothing is left half-written under --out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.saved.layout import load_saved

WORKSHOP = Path(__file__).resolve().parents[2] / "sample_docs" / "workshop"
COPIES = 3000  # 30,000 cases: a few seconds of scoring with two workers
GONE_S = 6.0


@pytest.fixture(scope="module")
def big_saved(tmp_path_factory) -> Path:
    saved = load_saved(WORKSHOP / "cases.csv")
    folder = tmp_path_factory.mktemp("saved")
    lines = [json.dumps({**c.to_json(), "case_id": f"{c.case_id}~{n}"}) for n in range(COPIES) for c in saved.cases]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "chunks.jsonl").write_text("".join(json.dumps(c.to_json()) + "\n" for c in saved.chunks),
                                         encoding="utf-8")
    return folder / "cases.jsonl"


def _start(cases: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", "score", "--cases", str(cases), "--out", str(out),
                             "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its session id is its pid: every process it starts shares it


def _session(sid: int) -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live process in session `sid`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found[int(entry.name)] = (int(fields[1]), command)
    return found


def _workers(proc: subprocess.Popen) -> list[int]:
    """The worker processes: children of the fork server, itself a child of the command."""
    session = _session(proc.pid)
    servers = {pid for pid, (parent, command) in session.items() if parent == proc.pid and "forkserver" in command}
    return [pid for pid, (parent, _) in session.items() if parent in servers]


def _wait_for(condition, proc: subprocess.Popen, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert proc.poll() is None, f"the command ended first: {proc.communicate()}"
        assert time.monotonic() < deadline, "the moment never came"
        time.sleep(0.02)


def _ended(proc: subprocess.Popen) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=GONE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the command outlived its stop by {GONE_S} s")
    deadline = time.monotonic() + GONE_S
    while (left := _session(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
    assert not left, f"processes of the command left: {left}"
    return proc.returncode, err


def _nothing_written(out: Path) -> None:
    assert not out.exists() or [p.relative_to(out) for p in out.rglob("*")] == []


def _catches(pid: int, sig: int) -> bool:
    """Whether process `pid` has a handler for `sig` (/proc's SigCgt mask): the CLI is in place."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(mask >> (sig - 1) & 1)


MOMENTS = {
    "reading": lambda proc, out: _catches(proc.pid, signal.SIGTERM),  # the CLI's handlers set: reading begins
    "workers busy": lambda proc, out: len(_workers(proc)) == 2,
    "rows coming back": lambda proc, out: any(p.stat().st_size > 0 for p in out.rglob(".rows.jsonl.*")),
}


@pytest.mark.parametrize(("sig", "moment"), [(signal.SIGTERM, m) for m in MOMENTS] + [(signal.SIGHUP, "workers busy")])
def test_a_stop_signal_ends_every_process_and_leaves_nothing_half_written(big_saved, tmp_path, sig, moment):
    out = tmp_path / "out"
    proc = _start(big_saved, out)
    _wait_for(lambda: MOMENTS[moment](proc, out), proc)
    proc.send_signal(sig)
    code, err = _ended(proc)
    assert (code, err.strip()) == (128 + sig, f"stopped by {signal.Signals(sig).name}")
    _nothing_written(out)


def test_a_worker_killed_mid_run_is_one_line_naming_its_batch(big_saved, tmp_path):
    out = tmp_path / "out"
    proc = _start(big_saved, out)
    _wait_for(lambda: len(_workers(proc)) == 2, proc)
    victim = _workers(proc)[0]
    os.kill(victim, signal.SIGKILL)
    code, err = _ended(proc)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: a scoring worker process (pid {victim}) was killed by signal 9 while scoring batch ")
    assert "--workers 1" in err
    _nothing_written(out)
