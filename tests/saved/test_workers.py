"""The worker processes of `rag-eval score` (`harness.saved.workers.in_order`): results in order, every worker ended
whatever stops the caller (the last batch, an error found late, a worker that dies), and no wait that can last for
ever — the late-error path is driven many times beside a CPU load, on whichever Python runs the suite (CI runs this
file on the machine's system Python too)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest

from harness.errors import InputError
from harness.saved.workers import WorkerDied, in_order

ROUNDS = 30


def _square_and_pid(setup: int) -> Callable[[list[int]], tuple[list[int], int]]:
    return lambda batch: ([x * x + setup for x in batch], os.getpid())


def _die_on_seven(setup: int) -> Callable[[list[int]], int]:
    def work(batch: list[int]) -> int:
        if 7 in batch:
            os.kill(os.getpid(), signal.SIGKILL)
        return sum(batch)
    return work


def _slow(setup: float) -> Callable[[list[int]], int]:
    def work(batch: list[int]) -> int:
        time.sleep(setup)
        return len(batch)
    return work


def _batches(count: int, *, then: BaseException | None = None) -> Iterator[list[int]]:
    for n in range(count):
        yield [n, n + 100]
    if then is not None:
        raise then


def _workers_seen(monkeypatch) -> list:
    """The worker processes every `in_order` call of the test starts."""
    seen: list = []
    start = multiprocessing.process.BaseProcess.start

    def recorded(process):
        start(process)
        seen.append(process)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", recorded)
    return seen


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_results_come_back_in_the_batches_order_from_other_processes(monkeypatch):
    seen = _workers_seen(monkeypatch)
    results = list(in_order(_batches(40), _square_and_pid, 1, workers=3, in_flight=2))
    assert [r for r, _ in results] == [[n * n + 1, (n + 100) ** 2 + 1] for n in range(40)]
    assert {pid for _, pid in results} == {p.pid for p in seen} and os.getpid() not in {pid for _, pid in results}
    assert len(seen) == 3 and not any(_alive(p.pid) for p in seen)


@pytest.fixture
def cpu_load():
    """Two processes spinning beside the test (the machines this runs on have few cores), stopped after it."""
    context = multiprocessing.get_context("fork")
    spinners = [context.Process(target=_spin, daemon=True) for _ in range(2)]
    for spinner in spinners:
        spinner.start()
    yield
    for spinner in spinners:
        spinner.kill()
        spinner.join()


def _spin() -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        pass


def test_a_bad_last_line_found_late_ends_every_worker_each_time_under_load(monkeypatch, cpu_load):
    """Contract (the late-error path of `rag-eval score`, which hung on CPython 3.11.2 with ProcessPoolExecutor):
    an error raised by the reading after many batches went out reaches the caller, every round, and leaves no
    worker alive; the rounds use slow workers so that batches are still out when the error comes."""
    seen = _workers_seen(monkeypatch)
    started = time.monotonic()
    for round_ in range(ROUNDS):
        with pytest.raises(InputError, match="line 99"):
            for _ in in_order(_batches(12 + round_ % 5, then=InputError("cases.jsonl: line 99")), _slow, 0.002,
                              workers=2, in_flight=4):
                pass
    assert len(seen) == 2 * ROUNDS and not any(_alive(p.pid) for p in seen)
    assert time.monotonic() - started < 120  # a round takes well under a second; a hang is caught by the timeout


def test_a_caller_that_stops_reading_ends_every_worker(monkeypatch):
    seen = _workers_seen(monkeypatch)
    results = in_order(_batches(100), _slow, 0.01, workers=2, in_flight=4)
    assert next(results) == 2
    results.close()  # the caller stopped (Ctrl-C, SIGTERM or an error of its own while writing)
    assert len(seen) == 2 and not any(_alive(p.pid) for p in seen)


def test_a_worker_that_dies_is_one_error_naming_the_batch(monkeypatch):
    seen = _workers_seen(monkeypatch)
    with pytest.raises(WorkerDied) as caught:
        list(in_order(_batches(20), _die_on_seven, 0, workers=2, in_flight=2, what=lambda n: f"batch {n + 1}"))
    assert str(caught.value).startswith("a scoring worker process (pid ")
    assert "was killed by signal 9 while scoring batch 8;" in str(caught.value)
    assert "--workers 1" in str(caught.value) and not any(_alive(p.pid) for p in seen)
