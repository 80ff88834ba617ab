"""Start-up of `rag-eval`: whole-process wall time of `rag-eval --help`, `compare --help` and
`report --help` (argument parsing is all they do, so this is the cost every such command pays before its work),
median over `--runs` runs, against the issue's target (<= 0.3 s) and as a ratio to `python -c pass`.

Each command runs in a fresh interpreter with this checkout first on the path, as the `rag-eval` script does
(`from harness.cli import main`); the first run of each is a warm-up (file-system cache) and not counted.
Run from the repo root: python bench/bench_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from _common import REPO, machine_line, table, verdict

TARGET_S = 0.3
RAG_EVAL = ["-c", "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"]
COMMANDS = {"python -c pass": ["-c", "pass"],
            "rag-eval --help": [*RAG_EVAL, "--help"],
            "rag-eval compare --help": [*RAG_EVAL, "compare", "--help"],
            "rag-eval report --help": [*RAG_EVAL, "report", "--help"]}


def wall_times(args: list[str], runs: int) -> list[float]:
    """Seconds of `runs` whole-process runs of `python ARGS`, after one untimed run."""
    times = []
    for n in range(runs + 1):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], cwd=REPO, stdout=subprocess.DEVNULL, check=True)
        if n:
            times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each command (default 7; median)")
    args = parser.parse_args(argv)
    print(f"bench_startup: median of {args.runs} whole-process runs")
    print(machine_line())
    medians = {name: statistics.median(wall_times(cmd, args.runs)) for name, cmd in COMMANDS.items()}
    floor = medians["python -c pass"]
    rows = [[name, f"{m:.3f}", f"{m / floor:.1f}x",
             "-" if name == "python -c pass" else f"{verdict(m, TARGET_S, higher_is_better=False)} "
                                                   f"(<= {TARGET_S} s)"]
            for name, m in medians.items()]
    print(table(["command", "median s", "vs python -c pass", "target"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
