"""Ctrl-C with --workers >= 2 against a slow HTTP service (issue 19 item 16): the run stops within about a second
(no waiting for calls in flight), writes its manifest and prints the resume command; a second Ctrl-C exits at
once, never with a traceback. The real command in a child process, a real SIGINT, a real local service."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import pytest

from harness.settings import RunSettings
from harness.systems.http import HttpSystem
from tests.conftest import REPO, SAMPLE_DOCS
from tests.support.hostile_http import HostileServer, cases_file


@pytest.fixture
def slow_service():
    with HostileServer(bomb_bytes=1 << 20, slow_s=60.0) as server:
        yield server


def _start(tmp_path, url) -> subprocess.Popen:
    cases = cases_file(tmp_path / "cases.jsonl", ["fine-1", "slow-1", "slow-2", "slow-3", "slow-4", "slow-5"])
    return subprocess.Popen([sys.executable, str(REPO / "evaluate_rag.py"), "--system", url, "--docs",
                             str(SAMPLE_DOCS), "--cases", cases, "--out", str(tmp_path / "out"), "--workers", "3",
                             "--timeout", "120"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_calls_in_flight(server: HostileServer, child: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while sum(n for k, n in server.seen.items() if k.startswith("slow")) < 3:
        assert child.poll() is None and time.monotonic() < deadline, "the run never reached the slow cases"
        time.sleep(0.05)
    time.sleep(0.2)


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_with_workers_stops_within_a_second_and_prints_the_resume_command(tmp_path, slow_service, presses):
    child = _start(tmp_path, slow_service.url)
    try:
        _wait_for_calls_in_flight(slow_service, child)
        pressed = time.monotonic()
        for _ in range(presses):
            child.send_signal(signal.SIGINT)
            time.sleep(0.05)
        _, stderr = child.communicate(timeout=30)  # before: 60 s, the calls in flight
        took = time.monotonic() - pressed
    finally:
        child.kill()
    # 130, or killed by the second SIGINT itself once Python's own handlers are gone at exit (a shell shows 130)
    assert child.returncode in ((130, -signal.SIGINT) if presses == 2 else (130,)), stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert took < 3.0, f"{took:.1f} s from Ctrl-C to exit"  # about a second, on a loaded 2-core machine
    run_dir = next((tmp_path / "out").iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "incomplete"
    if presses == 1:  # the whole way out: rows, manifest's end, the command to finish
        assert manifest["ended_at"] and f"rag-eval run --resume {run_dir}" in stderr
        assert [json.loads(line)["case_id"] for line in (run_dir / "rows.jsonl").read_text().splitlines()] == \
            ["fine-1"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_a_live_run_as_ctrl_c_does_resumable(tmp_path, slow_service, sig):
    """What `timeout`, CI runners and `docker stop` send: the run stops at once, resumable, exit 128 + signal."""
    child = _start(tmp_path, slow_service.url)
    try:
        _wait_for_calls_in_flight(slow_service, child)
        child.send_signal(sig)
        _, stderr = child.communicate(timeout=30)
    finally:
        child.kill()
    name = signal.Signals(sig).name
    assert child.returncode == 128 + sig and "Traceback" not in stderr, stderr
    run_dir = next((tmp_path / "out").iterdir())
    assert f"run stopped by {name}" in stderr and f"rag-eval run --resume {run_dir}" in stderr
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "incomplete"


def test_closing_an_http_system_fails_its_calls_in_flight_at_once(tmp_path, slow_service):
    system = HttpSystem(slow_service.url, RunSettings(timeout=120, retries=0))
    answers: list = []
    caller = threading.Thread(target=lambda: answers.append(_try(system)), daemon=True)
    caller.start()
    deadline = time.monotonic() + 30
    while not slow_service.seen.get("slow-1"):  # the call is sent: it waits on the service's 60 s now
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.2)
    closed = time.monotonic()
    system.close()
    caller.join(timeout=5)
    assert not caller.is_alive() and time.monotonic() - closed < 2
    assert answers and answers[0] != "answered"


def _try(system: HttpSystem) -> str:
    try:
        answer = system.answer("What is the hotel limit?", case_id="slow-1")
    except Exception as exc:  # whatever the aborted call raises, it must return
        return type(exc).__name__
    return "answered" if answer.error is None else answer.error


def test_ctrl_c_with_workers_stops_the_bundled_chatbot_too(tmp_path, server):
    """The chatbot spreads cases over its server's slots (HostPool); Ctrl-C abandons the chats in flight there too.
    The test server answers one chat, then holds every later one until released (never, here)."""
    server.hold_after = 1
    child = subprocess.Popen([sys.executable, str(REPO / "evaluate_rag.py"), "--host", server.url, "--docs",
                              str(SAMPLE_DOCS / "handbook.pdf"), "--cases", str(SAMPLE_DOCS / "cases.jsonl"),
                              "--out", str(tmp_path / "out"), "--workers", "3"],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        while server.chat_in_flight < 3:
            assert child.poll() is None and time.monotonic() < deadline, "the run never had 3 chats in flight"
            time.sleep(0.05)
        pressed = time.monotonic()
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=30)  # before: until the held chats were answered
        took = time.monotonic() - pressed
    finally:
        child.kill()
        server.release()
    assert child.returncode == 130 and "Traceback" not in stderr, stderr
    assert took < 3.0, f"{took:.1f} s from Ctrl-C to exit"
    assert "rag-eval run --resume" in stderr
