"""Run every benchmark at its defaults, one after another, each in its own process; exits 0 (measurements).

Run from the repo root: python bench/run_all.py [--only concurrency retrieval ...] [--big]
`--big` adds the opt-in large runs: retrieval at 1M chunks (a 3.1 GB matrix) and scoring 100k rows with claims
whatever the projected time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, machine_line

HERE = Path(__file__).resolve().parent
BENCHES = ("startup", "page_cache", "concurrency", "rebuild", "index_build", "retrieval", "score", "sweep_pool",
           "sweep", "openai", "judge", "http_memory", "model_memory")
BIG = {"retrieval": ["--big"], "score": ["--max-seconds", "100000"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHES), help="run only these")
    parser.add_argument("--big", action="store_true", help="include the opt-in large runs")
    args = parser.parse_args(argv)
    print(machine_line(), flush=True)
    started = time.perf_counter()
    for name in args.only or BENCHES:
        script = HERE / f"bench_{name}.py"
        extra = BIG.get(name, []) if args.big else []
        print(f"\n$ python {script.relative_to(REPO)} {' '.join(extra)}".rstrip(), flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *extra], cwd=REPO).returncode
        print(f"[{name}: {time.perf_counter() - start:.1f} s, exit {code}]", flush=True)
    print(f"\nall benchmarks: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
