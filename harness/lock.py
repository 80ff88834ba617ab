"""An OS lock on a run directory, so two processes never write one run at once (two `--resume` of one run
would interleave duplicate rows). The lock is held on `<run>/.lock` for the life of the process; the kernel
releases it when the process ends, however it ends, so a kill never leaves a stale lock."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from chatbot.store import open_regular

from .errors import RunLocked

LOCK = ".lock"


class RunLock:
    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK
        self._fh: IO[str] | None = None

    def acquire(self, started_at: str, *, wait_s: float = 0.0) -> RunLock:
        """Take the lock, waiting up to `wait_s` seconds for its holder; RunLocked names the holder."""
        fh = open_regular(self.path, "a+", encoding="utf-8")
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                fh.close()
                waited = f" (waited {wait_s:g} s)" if wait_s else ""
                raise RunLocked(f"{self.path.parent} is being written by {_describe(holder)}{waited}; wait for it "
                                "to finish (or stop it) and run again") from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": started_at}) + "\n")
        fh.flush()
        self._fh = fh
        return self

    def __enter__(self) -> RunLock:
        return self.acquire(_now())

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()  # closing the descriptor releases the lock
            self._fh = None


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on `path` (created if missing) while the block runs; others wait their turn."""
    with open_regular(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _describe(holder: str) -> str:
    try:
        data = json.loads(holder)
        return f"process {data['pid']} on {data['host']} (since {data['since']})"
    except (ValueError, KeyError, TypeError):
        return holder
