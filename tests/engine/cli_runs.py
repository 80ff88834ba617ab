"""Runs of `evaluate_rag.py --backend openai` against the engine tier's servers: the argument list with the small
settings the tier uses (one passage of at most 400 characters, so a prompt is a few hundred tokens and a case
takes seconds, not minutes, on two busy cores), a subprocess for the tests that send signals, and `/slots` reads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import HANDBOOK
from tests.engine.servers import Server

__all__ = ["ROOT", "SMALL", "busy_slots", "generating_slots", "run_argv", "spawn", "stop", "wait_for"]

ROOT = Path(__file__).resolve().parents[2]
SMALL = ("--top-k", "1", "--k", "1", "--chunk-size", "400", "--chunk-overlap", "50")


def run_argv(chat: Server, embed: Server, cases: str, out: Path, cache: Path, *extra: str,
             embed_model: str = "gemma-embed") -> list[str]:
    """`rag-eval run` arguments (without the command word) for the handbook against `chat` and `embed`, with the
    tier's small settings; the embedding cache in `cache` is shared by the tests that pass the same folder."""
    return ["--docs", str(HANDBOOK), "--cases", cases, "--backend", "openai", "--host", chat.base_url,
            "--embed-host", embed.base_url, "--chat-model", "smollm2", "--embed-model", embed_model,
            "--out", str(out), "--cache-dir", str(cache), *SMALL, *extra]


def spawn(argv: list[str], log: Path) -> subprocess.Popen:
    """`python evaluate_rag.py ARGV` as a child in a session of its own, its output into `log`."""
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, str(ROOT / "evaluate_rag.py"), *argv], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=os.environ.copy(),
                                start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    """Kill the child if it still runs (a failed test must not leave it asking the server)."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
        process.wait()


def busy_slots(server: Server) -> list[int]:
    """The ids of the server's slots that are processing a request now (`/slots`)."""
    return [slot["id"] for slot in _slots(server) if slot["is_processing"]]


def generating_slots(server: Server) -> list[int]:
    """The ids of the slots past the prompt, writing tokens (`next_token[0].n_decoded` > 0): a slot still reading
    its prompt finishes the batch before it can notice a cancellation."""
    return [slot["id"] for slot in _slots(server) if slot["is_processing"]
            and any(isinstance(t, dict) and (t.get("n_decoded") or 0) > 0 for t in slot.get("next_token") or [])]


def _slots(server: Server) -> list[dict]:
    with urllib.request.urlopen(server.url + "/slots", timeout=10) as reply:
        return json.load(reply)


def wait_for(condition, *, timeout_s: float, every_s: float = 0.5, what: str) -> None:
    """Poll `condition()` until it is true; AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(every_s)
    raise AssertionError(f"not seen within {timeout_s:g} s: {what}")
