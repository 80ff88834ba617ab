"""llama-server processes for the engine tier: 127.0.0.1 only, a free port each, logs in files, and always stopped
(context manager, atexit, and the kernel's parent-death signal when this process is killed outright)."""

from __future__ import annotations

import atexit
import ctypes
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Server", "ServerError", "ServerSettings", "log_tail"]


class ServerError(RuntimeError):
    """A server did not start, or stopped before it was ready."""


@dataclass(frozen=True)
class ServerSettings:
    """How one llama-server is started: `ctx` is the whole KV cache (`-c`), shared by `slots` (`-np`)."""

    model: Path
    alias: str
    ctx: int
    slots: int = 1
    threads: int = 1
    extra: tuple[str, ...] = ()

    def argv(self, binary: Path, port: int) -> list[str]:
        return [str(binary), "-m", str(self.model), "--alias", self.alias, "--host", "127.0.0.1", "--port", str(port),
                "-c", str(self.ctx), "-np", str(self.slots), "-t", str(self.threads), *NO_REPACK, *self.extra]


# On a CPU with AMX (Intel Sapphire Rapids and later) the native build's AMX weight buffers crash the server at its
# first decode (SIGSEGV in ggml_backend_amx_mul_mat, both models, the warm-up included); without weight repacking
# no such buffer is used, on any CPU.
NO_REPACK = ("--no-repack",)


@dataclass(eq=False)
class Server:
    """One llama-server. Use as a context manager, or call `start()` and `stop()`. `start_s` is the wall time
    from spawn to an ok `/health`."""

    binary: Path
    settings: ServerSettings
    log_dir: Path
    ready_timeout_s: float = 120.0
    stop_grace_s: float = 5.0
    port: int = field(default=0, init=False)
    start_s: float | None = field(default=None, init=False)
    _process: subprocess.Popen | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (ends in /v1)."""
        return self.url + "/v1"

    @property
    def log(self) -> Path:
        return self.log_dir / f"{self.settings.alias}-{self.port}.log"

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Server:
        """Spawn the server on a free port and wait for `/health` to say ok; a port taken in between is retried."""
        for _ in range(3):
            self.port = _free_port()
            self.log_dir.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            with self.log.open("wb") as log:
                self._process = subprocess.Popen(self.settings.argv(self.binary, self.port), stdin=subprocess.DEVNULL,
                                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                                 preexec_fn=_die_with_parent)
            _RUNNING.add(self)
            if self._wait_ready():
                self.start_s = time.monotonic() - started
                return self
            self.stop()
        raise ServerError(f"{self.settings.alias}: no free port after 3 tries; log: {self.log}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after the grace period; waits until the process is gone."""
        process, self._process = self._process, None
        _RUNNING.discard(self)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(self.stop_grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def _wait_ready(self) -> bool:
        """True once healthy; False when the port was taken; ServerError (with the log's tail) otherwise."""
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            code = self._process.poll() if self._process else -1
            if code is not None:
                tail = log_tail(self.log)
                if "couldn't bind" in tail:  # the free port was taken in between
                    return False
                self.stop()
                raise ServerError(f"{self.settings.alias}: llama-server exited with code {code} before it was "
                                  f"ready; log: {self.log}\n{tail}")
            if _healthy(self.url):
                return True
            time.sleep(0.1)
        self.stop()
        raise ServerError(f"{self.settings.alias}: /health at {self.url} not ok after {self.ready_timeout_s:g} s; "
                          f"log: {self.log}\n{log_tail(self.log)}")


_RUNNING: set[Server] = set()


def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop()


atexit.register(_stop_all)


def _die_with_parent() -> None:
    """In the child: ask the kernel for SIGTERM when our parent dies (Linux), so a killed test run leaves no
    server behind. Called between fork and exec."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def log_tail(path: Path, lines: int = 30) -> str:
    """The last `lines` of a log, for an error message; `(no log)` when it cannot be read."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as reply:
            return json.load(reply).get("status") == "ok"
    except (OSError, ValueError, urllib.error.URLError):
        return False  # not listening yet, or 503 "Loading model"
