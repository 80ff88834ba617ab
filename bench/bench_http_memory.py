"""Peak memory of `rag-eval run --system http://…` against a service returning a 1 GB body, against the body cap.

A local service (tests/support/hostile_http.py, on 127.0.0.1) answers each `huge*` case with a 1 GB body written
as the client reads it (never held by the service) and each `fine-*` case with a small valid reply. The real
command runs in a child process; its peak RSS comes from wait4. Three runs: only fine cases (the constant: Python,
pydantic, pypdf, the sample documents), one 1 GB body with `--workers 1`, and four 1 GB bodies with `--workers 4`.
Target (issue 19 item 2): peak − constant <= workers × `--max-body-bytes`.
Run from the repo root: python bench/bench_http_memory.py [--cap 10000000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, SAMPLE_DOCS, isolated_state, machine_line, table, verdict

from tests.support.hostile_http import HostileServer, cases_file


def run(server: HostileServer, root: Path, ids: list[str], workers: int, cap: int) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of one `rag-eval run` over cases `ids`."""
    cases = cases_file(root / f"cases-{len(ids)}-{workers}.jsonl", ids)
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, str(REPO / "evaluate_rag.py"), "--system", server.url, "--docs",
                              str(SAMPLE_DOCS), "--cases", cases, "--out", str(root / "out"), "--retries", "0",
                              "--timeout", "60", "--workers", str(workers), "--max-body-bytes", str(cap)],
                             cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return usage.ru_maxrss / 1024, time.perf_counter() - start, os.waitstatus_to_exitcode(status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap", type=int, default=10_000_000, help="--max-body-bytes (default 10000000)")
    args = parser.parse_args(argv)
    cap_mb = args.cap / 2**20
    print(f"bench_http_memory: 1 GB bodies from a local service, --max-body-bytes {args.cap} ({cap_mb:.1f} MiB)")
    print(machine_line())
    rows = []
    with isolated_state("http-memory") as root, HostileServer(bomb_bytes=1 << 20) as server:
        base, wall, code = run(server, root, ["fine-1", "fine-2", "fine-3", "fine-4"], 4, args.cap)
        rows.append(["constant: 4 small replies, --workers 4", f"{base:.0f}", "", "", f"{wall:.1f}", code, ""])
        for workers, ids in ((1, ["huge-1", "fine-1"]), (4, ["huge-1", "huge-2", "huge-3", "huge-4", "fine-1"])):
            peak, wall, code = run(server, root, ids, workers, args.cap)
            over = peak - base
            rows.append([f"{workers} x 1 GB body, --workers {workers}", f"{peak:.0f}", f"{over:.0f}",
                         f"{over / cap_mb:.2f}", f"{wall:.1f}", code,
                         verdict(over, workers * cap_mb, higher_is_better=False)])
    print(table(["run", "peak RSS MB", "over constant MB", "over / cap", "wall s", "exit",
                 "over <= workers x cap"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
