"""Worker processes that turn batches into results, in order (`in_order`), and that always end.

Each worker is forked from multiprocessing's fork server (a clean process, whatever threads the caller runs) and
talks to the caller over a pipe of its own; batch n goes to worker n mod N, so the results are read back in the
batches' order, at most `in_flight` per worker being out at once. There is no pool object, no manager thread and
no shared queue: the caller's side is a plain loop over pipes, and its `finally` closes every pipe and kills every
worker still alive, whatever stopped the loop (the last batch, bad input found late, Ctrl-C, SIGTERM, a bug).
`concurrent.futures.ProcessPoolExecutor`'s shutdown joins management threads that several CPython 3.10/3.11
releases can leave waiting for ever (e.g. CPython issues 94777, 105829, 125451, fixed after 3.11.2, the Python of
Debian 12): this design has nothing of the kind to wait for.

A worker reads its pipe in a thread of its own, so the caller's send never waits on a worker busy sending a result
the caller has not read yet; it ends when the caller's end of its pipe closes (the caller finished or died: EOF) or
when its result can no longer be sent. A worker that dies is `WorkerDied`, naming the batch.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

from ..errors import RagError

__all__ = ["WorkerDied", "in_order"]

B = TypeVar("B")
R = TypeVar("R")

_JOIN_S = 5.0  # after the last batch, how long a worker may take to see the end of its pipe before it is killed
_KILLED_S = 2.0  # how long to wait for word of a killed worker's end


class WorkerDied(RagError):
    """A worker process ended before it sent back a batch's result (killed, out of memory, a crash)."""


def in_order(batches: Iterable[B], start: Callable[[Any], Callable[[B], R]], setup: Any, *, workers: int,
             in_flight: int, preload: tuple[str, ...] = (), what: Callable[[int], str] = str) -> Iterator[R]:
    """The results of `batches`, in order, computed by `workers` processes: each calls `start(setup)` once
    (`start` and `setup` must pickle) and uses what it returns on each of its batches. `preload` names modules
    the fork server imports once, so that workers start with them. `what(n)` says which cases batch n holds, for
    the message of a worker that died."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    crew = _Crew(context, workers, start, setup)
    try:
        out: deque[tuple[int, int]] = deque()  # (batch number, its worker), sent and not read back
        for n, batch in enumerate(batches):
            crew.send(n % workers, batch)
            out.append((n, n % workers))
            if len(out) >= in_flight * workers:
                yield crew.receive(*out.popleft(), what)
        while out:
            yield crew.receive(*out.popleft(), what)
        crew.finish()
    finally:
        crew.stop()


class _Crew(Generic[B, R]):
    """The worker processes and the caller's ends of their pipes."""

    def __init__(self, context: Any, workers: int, start: Callable[[Any], Callable[[B], R]], setup: Any):
        self.processes: list[BaseProcess] = []
        self.pipes: list[Connection] = []
        try:
            for _ in range(workers):
                mine, theirs = context.Pipe()
                process = context.Process(target=_serve, args=(theirs, start, setup), daemon=True)
                process.start()
                theirs.close()  # only the worker holds its end: its death is our EOF
                self.processes.append(process)
                self.pipes.append(mine)
        except BaseException:
            self.stop()
            raise

    def send(self, worker: int, batch: B) -> None:
        try:
            self.pipes[worker].send(batch)
        except OSError:  # the worker died: reading back its oldest batch out says which one it was scoring
            pass

    def receive(self, n: int, worker: int, what: Callable[[int], str]) -> R:
        try:
            kind, value = self.pipes[worker].recv()
        except (EOFError, OSError):
            raise self._died(worker, n, what) from None
        if kind == "error":  # a bug in the scoring: the worker's traceback as text
            raise RuntimeError(f"a worker process failed on {what(n)}:\n{value}")
        return value

    def _died(self, worker: int, n: int, what: Callable[[int], str]) -> WorkerDied:
        process = self.processes[worker]
        process.join(1.0)
        code = process.exitcode
        how = "is gone" if code is None else f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
        return WorkerDied(f"a scoring worker process (pid {process.pid}) {how} while scoring {what(n)}; nothing "
                          "of this run is kept: run it again, with --workers 1 to score in one process")

    def finish(self) -> None:
        """Every batch is back: close the pipes and give the workers a moment to end by themselves."""
        for pipe in self.pipes:
            pipe.close()
        for process in self.processes:
            process.join(_JOIN_S)

    def stop(self) -> None:
        """End every worker still alive, at once (SIGKILL: a worker holds nothing that must be written). No wait
        here is unbounded: a worker's exit is learnt through the fork server, which need not tell it in time."""
        for pipe in self.pipes:
            pipe.close()
        for process in self.processes:
            if process.exitcode is None:
                process.kill()
        for process in self.processes:
            process.join(_KILLED_S)


def _serve(pipe: Connection, start: Callable[[Any], Callable[[Any], Any]], setup: Any) -> None:
    """A worker: batches in, results out, until the caller closes its end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: it is the caller's
    work = start(setup)
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=_read, args=(pipe, inbox), daemon=True).start()
    for batch in iter(inbox.get, _END):
        try:
            reply = ("ok", work(batch))
        except Exception:  # noqa: BLE001 - a bug in the scoring reaches the caller as text, not as a lost worker
            import traceback

            reply = ("error", traceback.format_exc())
        try:
            pipe.send(reply)
        except OSError:  # the caller is gone
            return


_END = object()


def _read(pipe: Connection, inbox: queue.SimpleQueue) -> None:
    try:
        for batch in iter(pipe.recv, _END):  # recv never returns _END: until EOF
            inbox.put(batch)
    except (EOFError, OSError):
        pass
    inbox.put(_END)
