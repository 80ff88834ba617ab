"""Engine tier (issue #28, e): a run killed outright (SIGKILL: no handler runs) and finished with `--resume`
against the real server: every case answered once, nothing duplicated."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from harness.cli import main
from harness.runs import read_manifest, read_rows
from tests.conftest import sample_cases
from tests.engine.cli_runs import run_argv, spawn, stop, wait_for

pytestmark = pytest.mark.engine

CASES = 3


def test_a_run_killed_mid_way_resumes_to_every_case_once(chat_server, embed_server, run_cache, tmp_path):
    """Contract: SIGKILL after the first row is written leaves a run directory `--resume` finishes: the rows hold
    each of the 3 cases exactly once, none is an error, and the manifest is complete and says it was resumed."""
    cases, out, log = sample_cases(tmp_path), tmp_path / "runs", tmp_path / "run.log"
    argv = run_argv(chat_server, embed_server, cases, out, run_cache, "--limit", str(CASES), "--num-predict", "64")
    run = spawn(argv, log)
    try:
        def one_row() -> bool:
            dirs = list(out.iterdir()) if out.exists() else []
            return run.poll() is not None or bool(dirs and (dirs[0] / "rows.jsonl").exists()
                                                  and (dirs[0] / "rows.jsonl").read_bytes().count(b"\n") >= 1)
        wait_for(one_row, timeout_s=240, every_s=0.2, what="the first row written")
        assert run.poll() is None, f"the run ended before it could be killed:\n{log.read_text()}"
        run.send_signal(signal.SIGKILL)
        run.wait()
    finally:
        stop(run)
    (run_dir,) = out.iterdir()
    before = read_rows(run_dir)
    assert 1 <= len(before) < CASES
    assert read_manifest(run_dir).status != "complete"
    code = main(["run", "--resume", str(run_dir), *argv])
    assert code in (0, 1), code  # 1: no case passed, which a 135M model may well do
    rows = read_rows(run_dir)
    counts = Counter(row.key for row in rows)
    assert len(counts) == CASES and set(counts.values()) == {1}, counts
    assert [row.error for row in rows] == [None] * CASES
    assert {row.key for row in before} <= set(counts)
    manifest = read_manifest(run_dir)
    assert manifest.status == "complete" and manifest.resumed_at
