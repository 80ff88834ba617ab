"""Engine tier (issue #28, d): `--workers 2` against a llama-server with two slots (`-np 2`), and what is left on
the server when a case times out or the run is interrupted. `/slots` is read at most about once a second while a
request may have been abandoned: llama.cpp notices a closed connection only after a second without another result,
and every `/slots` answer is one (tests/engine/test_engine_contracts.py)."""

from __future__ import annotations

import signal
import time

import pytest

from harness.cli.run import EXIT_ALL_ERRORED
from harness.runs import read_rows
from tests.conftest import sample_cases
from tests.engine.cli_runs import busy_slots, generating_slots, run_argv, spawn, stop, wait_for

pytestmark = pytest.mark.engine


def test_two_workers_fill_both_slots_and_ctrl_c_leaves_none_generating(chat_server, embed_server, run_cache,
                                                                       tmp_path):
    """Contract: with --workers 2 both slots of the server write a case's reply at the same time; a Ctrl-C
    (SIGINT) then stops the run with exit code 130, and no slot keeps generating for it 1.5 s after the process is
    gone."""
    log = tmp_path / "run.log"
    run = spawn(run_argv(chat_server, embed_server, sample_cases(tmp_path), tmp_path / "runs", run_cache,
                         "--limit", "4", "--workers", "2", "--num-predict", "2000"), log)
    try:
        wait_for(lambda: len(generating_slots(chat_server)) == 2 or run.poll() is not None, timeout_s=240,
                 every_s=0.3, what="both slots generating at once")
        assert run.poll() is None, log.read_text()
        run.send_signal(signal.SIGINT)
        assert run.wait(timeout=60) == 130, log.read_text()
    finally:
        stop(run)
    time.sleep(1.5)
    assert busy_slots(chat_server) == [], log.read_text()[-2000:]


def test_a_timed_out_case_leaves_no_slot_generating(chat_server, embed_server, run_cache, tmp_path):
    """Contract: a case that takes longer than --timeout is an error row naming the timeout, and the server stops
    generating it: one worker never has more than one slot busy once a second has passed after its timeout, and
    no slot is busy 1.5 s after the run ends."""
    log = tmp_path / "run.log"
    run = spawn(run_argv(chat_server, embed_server, sample_cases(tmp_path), tmp_path / "runs", run_cache,
                         "--limit", "2", "--workers", "1", "--num-predict", "2000", "--timeout", "12",
                         "--retries", "0"), log)
    seen: list[list[int]] = []
    try:
        wait_for(lambda: busy_slots(chat_server) != [] or run.poll() is not None, timeout_s=240, every_s=0.3,
                 what="the first case on the server")
        first = time.monotonic()
        while run.poll() is None and time.monotonic() - first < 120:
            time.sleep(1.2)
            if time.monotonic() - first > 12 + 1.5:  # past the first case's timeout and llama.cpp's second
                seen.append(busy_slots(chat_server))
        assert run.wait(timeout=60) in (0, 1, EXIT_ALL_ERRORED), log.read_text()  # 4: both cases timed out
    finally:
        stop(run)
    assert all(len(busy) <= 1 for busy in seen), seen
    time.sleep(1.5)
    assert busy_slots(chat_server) == []
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = read_rows(run_dir)
    assert len(rows) == 2
    timed_out = [r for r in rows if r.error and "took longer than 12 s" in r.error]
    assert timed_out, [r.error for r in rows]
