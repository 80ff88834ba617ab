"""Wall time of a whole `rag-eval sweep` (harness/sweep/run.py), on one and on two test servers.

The sweep is chunk size x top-k over the bundled handbook and its cases (`--grid chunk-size=1000,2000 --grid
top-k=2,4` by default): every cell is a full run (label check, preflight, index from the vector cache, answering,
rows, summary), then the leaderboard. Each test server answers at most `--slots` chats at once (like
OLLAMA_NUM_PARALLEL), each after `--delay` seconds; embeddings are answered without delay, since the issue's ideal
counts chat calls only (a real Ollama embeds a question in milliseconds). `--workers` is per server and equals
`--slots`. Measured, each on a fresh cache:

  one server    ideal = distinct chat calls x delay / slots          target wall <= 1.15 x ideal
  two servers   ideal = distinct chat calls x delay / (2 x slots)    target wall <= 1.15 x ideal; two / one <= 0.6
  warm          the sweep again over the two servers' cache: 0 chat and 0 embed requests expected

"distinct chat calls" is counted from the servers' request logs (model loads left out). Were cells run one after
another, slots would idle at the end of each cell while its last cases finish: the script prints that floor (sum
over cells of ceil(cases / slots) x delay) beside the ideal. A sweep runs two cells at once, so one cell's last
cases overlap the next cell's answers. Each server runs in a child process of its own, as a real Ollama does;
`--in-process` runs them in this process instead, where their Python CPU (word-hash embeddings, the chat rule,
JSON) competes with the harness for one interpreter lock, which a real server never does.
Run from the repo root: python bench/bench_sweep.py [--delay 0.2 --slots 4 --grid chunk-size=1000,2000 ...]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import time
from multiprocessing.connection import Connection
from pathlib import Path

from _common import SAMPLE_DOCS, isolated_state, machine_line, table, verdict

from harness.sweep.plan import load_sweep
from harness.sweep.run import run_sweep
from tests.fake_ollama import FakeOllama

TARGET = 1.15  # wall / ideal, from the issue
TWO_OVER_ONE = 0.6  # two servers' wall / one server's wall, from the issue


class Server:
    """A test server with the settings of this benchmark, in this process or in a child process; the sweep only
    sees its URL, the benchmark asks it for request counts."""

    def __init__(self, delay: float, slots: int, *, in_process: bool):
        self.delay, self.slots = delay, slots
        self._local: FakeOllama | None = None
        if in_process:
            self._local = _configured(FakeOllama().start(), delay, slots)
            self.url = self._local.url
            return
        self._conn, child = multiprocessing.Pipe()
        self._proc = multiprocessing.get_context("fork").Process(target=_serve, args=(child, delay, slots),
                                                                 daemon=True)
        self._proc.start()
        self.url = self._conn.recv()

    def ask(self, what: str) -> dict:
        """`stats` (chats, embeds, peak chats in flight), `reset` or `stop`."""
        if self._local is not None:
            return _answer(self._local, what, self.delay, self.slots)
        self._conn.send(what)
        reply = self._conn.recv()
        if what == "stop":
            self._proc.join(timeout=10)
        return reply


def _configured(server: FakeOllama, delay: float, slots: int) -> FakeOllama:
    server.delay_s, server.slots, server.embed_delay_s = delay, slots, 0.0
    return server


def _answer(server: FakeOllama, what: str, delay: float, slots: int) -> dict:
    if what == "reset":
        server.reset()
        _configured(server, delay, slots)
    elif what == "stop":
        server.stop()
    return {"chats": len(server.chat_bodies()), "embeds": len(server.bodies("/api/embed")),
            "peak": server.peak_chat_in_flight}


def _serve(conn: Connection, delay: float, slots: int) -> None:
    """The child process: one server, answering the benchmark's questions until `stop`."""
    server = _configured(FakeOllama().start(), delay, slots)
    conn.send(server.url)
    while True:
        what = conn.recv()
        conn.send(_answer(server, what, delay, slots))
        if what == "stop":
            return


def one_sweep(servers: list[Server], grid: list[str], workers: int, root: Path, name: str, docs: str,
              cases: str) -> dict:
    """Run the sweep into `root/name` with the cache `root/cache-<cache>`; wall time and request counts."""
    flags = {"docs": docs, "cases": cases,
             "out": str(root / name), "k": (1, 2), "workers": workers, "answer_cache": True,
             "host": servers[0].url, "hosts": tuple(s.url for s in servers) if len(servers) > 1 else ()}
    plan = load_sweep(None, grid=grid, flags=flags)
    before = [s.ask("stats") for s in servers]
    start = time.perf_counter()
    result = run_sweep(plan, flags, grid=grid)
    wall = time.perf_counter() - start
    after = [s.ask("stats") for s in servers]
    return {"wall": wall, "cells": len(plan.cells),
            "chats": sum(a["chats"] - b["chats"] for a, b in zip(after, before)),
            "embeds": sum(a["embeds"] - b["embeds"] for a, b in zip(after, before)),
            "per_server": [a["chats"] for a in after], "board": result.files["json"].read_bytes(),
            "peaks": [a["peak"] for a in after]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per chat reply (default 0.2)")
    parser.add_argument("--slots", type=int, default=4, help="chats each server answers at once (default 4)")
    parser.add_argument("--grid", action="append", help="sweep axes (default chunk-size=1000,2000 top-k=2,4)")
    parser.add_argument("--docs", default=str(SAMPLE_DOCS / "handbook.pdf"),
                        help="documents (default: the handbook; `sample_docs` for the whole bundle)")
    parser.add_argument("--cases", default=str(SAMPLE_DOCS / "cases.jsonl"),
                        help="cases (default: the handbook's 21; sample_docs/all_cases.jsonl for the bundle's 195)")
    parser.add_argument("--in-process", action="store_true",
                        help="run the test servers in this process (they then share its interpreter lock)")
    args = parser.parse_args(argv)
    d, s = args.delay, args.slots
    grid = args.grid or ["chunk-size=1000,2000", "top-k=2,4"]
    where = "in this process" if args.in_process else "in child processes"
    print(f"bench_sweep: sweep {' x '.join(grid)} over {args.docs}, chat delay {d:g} s, {s} slots and workers "
          f"per server, embeddings without delay, servers {where}")
    print(machine_line())
    with isolated_state("sweep") as root:
        servers = [Server(d, s, in_process=args.in_process) for _ in range(2)]
        try:
            import os
            os.environ["PDF_RAG_EVAL_CACHE"] = str(root / "cache-one")
            one = one_sweep(servers[:1], grid, s, root, "one", args.docs, args.cases)
            for server in servers:
                server.ask("reset")
            os.environ["PDF_RAG_EVAL_CACHE"] = str(root / "cache-two")
            two = one_sweep(servers, grid, s, root, "two", args.docs, args.cases)
            warm = one_sweep(servers, grid, s, root, "warm", args.docs, args.cases)
        finally:
            for server in servers:
                server.ask("stop")
    cases = one["chats"] // one["cells"]
    rows = []
    for name, found, slots in (("one server", one, s), ("two servers", two, 2 * s)):
        ideal = found["chats"] * d / slots
        floor = found["cells"] * math.ceil(cases / slots) * d
        rows.append([name, slots, found["chats"], f"{found['wall']:.2f}", f"{ideal:.2f}", f"{floor:.2f}",
                     f"{found['wall'] / ideal:.3f}", f"<= {TARGET}",
                     verdict(found["wall"] / ideal, TARGET, higher_is_better=False)])
    print(table(["setup", "total slots", "chat calls", "wall s", "ideal s", "cell floor s", "wall/ideal", "target",
                 "verdict"], rows))
    ratio = two["wall"] / one["wall"]
    print(f"two servers / one server = {ratio:.3f} (target <= {TWO_OVER_ONE}: "
          f"{verdict(ratio, TWO_OVER_ONE, higher_is_better=False)})")
    print(f"{one['cells']} cells x {cases} cases; chats per server with two: {two['per_server']}; peak chats in "
          f"flight per server: one {one['peaks']}, two {two['peaks']}; embed requests: one {one['embeds']}, "
          f"two {two['embeds']}")
    same = warm["board"] == two["board"]
    print(f"warm rerun: {warm['chats']} chat and {warm['embeds']} embed requests (target 0 and 0: "
          f"{'PASS' if warm['chats'] == warm['embeds'] == 0 else 'MISS'}), {warm['wall']:.2f} s, leaderboard.json "
          f"{'byte-identical' if same else 'DIFFERENT'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
