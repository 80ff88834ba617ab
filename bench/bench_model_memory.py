"""Peak memory of runs and of the judge against a model server that answers with a 300 MB reply, against the cap.

The tests' server (tests/fake_ollama.py, on 127.0.0.1, not a model) answers every chat with a 300 MB stream of
JSON-looking text, a megabyte at a time (never held by the server): `wire_fault = "huge"`. The real commands run in
child processes; their peak RSS comes from wait4. For each backend (Ollama's API, the OpenAI-compatible API) and for
`rag-eval judge`: the same command once with ordinary replies (the constant: Python, numpy, pydantic, the documents)
and once with the 300 MB reply. Target (issue #27): peak - constant <= `--max-body-bytes` + a constant of copies
(printed as a ratio to the cap).
Run from the repo root: python bench/bench_model_memory.py [--cap 10000000] [--huge 300000000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, SAMPLE_DOCS, isolated_state, machine_line, table, verdict

from tests.fake_ollama import FakeOllama
from tests.support.judge_rules import judge_rule

HANDBOOK = SAMPLE_DOCS / "handbook.pdf"
CASES = SAMPLE_DOCS / "cases.jsonl"


def peak(args: list[str]) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of `rag-eval ARGS` in a child process."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return usage.ru_maxrss / 1024, time.perf_counter() - started, os.waitstatus_to_exitcode(status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap", type=int, default=10_000_000, help="--max-body-bytes (default 10000000)")
    parser.add_argument("--huge", type=int, default=300_000_000, help="bytes of the huge reply (default 300 MB)")
    args = parser.parse_args(argv)
    cap_mb = args.cap / 2**20
    print(f"bench_model_memory: {args.huge / 1e6:.0f} MB chat replies from the tests' server, --max-body-bytes "
          f"{args.cap} ({cap_mb:.1f} MiB)")
    print(machine_line())
    rows = []
    with isolated_state("model-memory") as root, FakeOllama() as server:
        server.huge_bytes = args.huge
        run_dir = root / "judged"
        subprocess.run([sys.executable, "-m", "harness.cli", "run", "--offline", "--docs", str(HANDBOOK), "--cases",
                        str(CASES), "--limit", "3", "--out", str(run_dir)], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        judged = next(run_dir.iterdir())
        commands = {
            f"run, --backend {b}": ["run", "--docs", str(HANDBOOK), "--cases", str(CASES), "--limit", "1",
                                     "--retries", "0", "--backend", b, "--host", server.url + suffix,
                                     "--max-body-bytes", str(args.cap)]
            for b, suffix in (("ollama", ""), ("openai", "/v1"))}
        commands["judge (ollama)"] = ["judge", str(judged), "--host", server.url, "--retries", "0",
                                      "--max-body-bytes", str(args.cap)]
        for name, command in commands.items():
            server.wire_fault, server.chat_rule = None, judge_rule() if name.startswith("judge") else server.chat_rule
            base, _, _ = peak([*command, *_fresh(command, root, name, "a")])
            server.wire_fault = "huge"
            top, wall, code = peak([*command, *_fresh(command, root, name, "b")])
            over = top - base
            rows.append([name, f"{base:.0f}", f"{top:.0f}", f"{over:.0f}", f"{over / cap_mb:.2f}", f"{wall:.1f}",
                         code, verdict(over, 3 * cap_mb, higher_is_better=False)])
    print(table(["command", "ordinary MB", "300 MB reply MB", "over MB", "over / cap", "wall s", "exit",
                 "over <= 3 x cap"], rows))
    return 0


def _fresh(command: list[str], root: Path, name: str, which: str) -> list[str]:
    """Where this attempt writes, so the two attempts share no cache and no output."""
    where = root / f"{name.split()[0]}-{which}-{len(name)}"
    if command[0] == "judge":
        return ["--reviews", str(where / "reviews.jsonl"), "--cache-dir", str(where / "cache")]
    return ["--out", str(where), "--cache-dir", str(where / "cache")]


if __name__ == "__main__":
    sys.exit(main())
