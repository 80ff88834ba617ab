"""`rag-eval score`, `compare` and `report` on production-sized logs: 10k and 100k rows (1M with `--big`).

Generates saved outputs by replicating the workshop cases (`sample_docs/workshop/`, 10 cases, 8 chunks, 10 claims)
with unique case ids (`W01~0`, `W01~1`, ...), in the JSONL layout and, for the JSONL / CSV ratio, in the CSV layout.
Run A is the workshop as shipped; run B changes every third copy (its first retrieved id dropped, its answer's
last word cut), so that compare has differences to test. Each command runs as `python -m harness.cli ...` in a
child process of its own, its output sent to /dev/null; wall time around it, and its CPU time (user + system) and
peak RSS, of the child (`os.wait4`) and of the processes it starts (`rag-eval score`'s worker processes and their
fork server, sampled from /proc every 0.1 s: CPU summed, RSS the most the whole tree held at once). Per size:

  score A       rag-eval score --cases A/cases.jsonl (claims and chunks beside it)
  score A csv   the same rows from the CSV layout (JSONL / CSV is the ratio of CPU seconds)
  score B       the second run, for compare
  compare A B   rag-eval compare on the two score runs (default resamples)
  report A      rag-eval report of run A, with the HTML's size

A command still running after `--timeout` seconds is stopped and shown as `> T`; each has 6 GiB of address space
(RLIMIT_AS), so one that would need more fails (exit 1, MemoryError) instead of crowding the machine (compare
needed ~27 GB at 1M rows before it streamed its rows into columns, and the report holds every row in memory).
The growth exponent between successive sizes is log(t2 / t1) / log(n2 / n1): 1.0 is linear, 2.0 quadratic.
Targets (issue 31): score of 1M rows peak RSS <= 500 MB; >= 10,000 rows/s at 100k; JSONL <= 1.5x CSV; report of
100k <= 10 s and HTML <= 5 MB; compare of 100k <= 15 s and <= 1 GB, of 1M <= 150 s.
Run from the repo root: python bench/bench_scale.py [--sizes 10000 100000] [--big] [--only score report]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _common import REPO, SAMPLE_DOCS, isolated_state, machine_line, table, verdict

WORKSHOP = SAMPLE_DOCS / "workshop"
STEPS = ("score", "score_csv", "score_b", "compare", "report")
_ID = "@@CASE-ID@@"  # where a copy's case id goes in a line template


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float
    rss_mb: float
    code: int | None  # None: stopped at the timeout
    out_bytes: int | None = None


def _workshop() -> tuple[list[dict], list[dict], list[dict]]:
    """The workshop's chunks, cases and claims as JSONL objects (the saved layout's own readers, so the replicas
    mean what the CSV files mean)."""
    sys.path.insert(0, str(REPO))
    from harness.saved.layout import load_saved

    saved = load_saved(WORKSHOP / "cases.csv")
    return ([c.to_json() for c in saved.chunks], [c.to_json() for c in saved.cases],
            [c.to_json() for c in saved.claims])


def _variant_b(case: dict) -> dict:
    """Run B's copy of a case: the first retrieved id dropped, the answer's last word cut."""
    ids = case.get("retrieved_chunk_ids")
    answer = case["candidate_answer"].rsplit(" ", 1)[0]
    return {**case, "candidate_answer": answer, **({"retrieved_chunk_ids": ids[1:]} if ids and len(ids) > 1 else {})}


def _csv_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "|".join(";".join(v) if isinstance(v, list) else str(v) for v in value)
    return "" if value is None else str(value)


def _templates(records: list[dict], layout: str, columns: list[str]) -> list[str]:
    """One line per record with its case id replaced by a marker, so a copy is one `str.replace`."""
    out = []
    for record in records:
        marked = {**record, "case_id": _ID} if "case_id" in record else record
        if layout == "jsonl":
            out.append(json.dumps(marked, ensure_ascii=False) + "\n")
        else:
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerow([_csv_value(marked.get(c)) for c in columns])
            out.append(buffer.getvalue())
    return out


def write_saved(folder: Path, copies: int, layout: str, *, variant: bool = False) -> Path:
    """cases, chunks and claims files of `copies` replicas of the workshop in `folder`; returns the cases file."""
    chunks, cases, claims = _workshop()
    folder.mkdir(parents=True, exist_ok=True)
    case_columns = ["case_id", "question", "expected_chunk_ids", "required_points", "candidate_answer",
                    "cited_chunk_ids", "should_abstain", "candidate_abstains", "retrieved_chunk_ids"]
    columns = {"chunks": ["chunk_id", "topic", "text"], "cases": case_columns,
               "claims": ["case_id", "claim", "support_chunk_ids"]}
    plain = _templates(cases, layout, case_columns)
    changed = _templates([_variant_b(c) for c in cases], layout, case_columns) if variant else plain
    for role, records in (("chunks", chunks), ("cases", cases), ("claims", claims)):
        with open(folder / f"{role}.{layout}", "w", encoding="utf-8", newline="") as fh:
            if layout == "csv":
                fh.write(",".join(columns[role]) + "\n")
            if role == "chunks":
                fh.writelines(_templates(records, layout, columns[role]))
                continue
            lines = _templates(records, layout, columns[role]) if role == "claims" else plain
            ids = [r["case_id"] for r in records]
            for copy in range(copies):
                block = changed if role == "cases" and copy % 3 == 2 else lines
                fh.write("".join(line.replace(_ID, f"{cid}~{copy}") for line, cid in zip(block, ids)))
    return folder / f"cases.{layout}"


MEMORY_LIMIT = 6 << 30  # bytes of address space per command: a run that would eat the machine fails instead


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_child(args: list[str], timeout: float) -> Measured:
    """Wall, CPU (user + system) and peak RSS of `python -m harness.cli ARGS` in a child process and the processes
    it starts (`rag-eval score`'s workers): the child's own from wait4, its descendants' from /proc every 0.1 s
    (their CPU as last seen, so the last 0.1 s of each may be missed; the peak RSS is the most the whole tree held
    at one sample, or the child's own peak when higher). Sampling more often costs this process a share of the
    cores the command runs on."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, preexec_fn=_limited)
    deadline, code = start + timeout, None
    others: dict[int, float] = {}  # descendant pid -> its CPU seconds when last seen
    tree_peak, sampled = 0, 0.0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.perf_counter() > deadline:
            child.kill()
            _, status, usage = os.wait4(child.pid, 0)
            break
        if time.perf_counter() - sampled >= 0.1:
            rss, sampled = 0, time.perf_counter()
            for p in _tree(child.pid):
                cpu, resident = _stat(p)
                rss += resident
                if p != child.pid and cpu is not None:
                    others[p] = cpu
            tree_peak = max(tree_peak, rss)
        time.sleep(0.02)
    child.returncode = -1  # reaped here: Popen must not wait for it again
    return Measured(time.perf_counter() - start, usage.ru_utime + usage.ru_stime + sum(others.values()),
                    max(usage.ru_maxrss * 1024, tree_peak) / (1 << 20), code)


_TICK, _PAGE = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it (Linux /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except OSError:  # gone meanwhile
            pass
    return out


def _stat(pid: int) -> tuple[float | None, int]:
    """(CPU seconds, resident bytes) of a process now; (None, 0) when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None, 0
    return (int(fields[11]) + int(fields[12])) / _TICK, int(fields[21]) * _PAGE


def _run_dir(out: Path) -> Path:
    [found] = [p for p in out.iterdir() if p.is_dir()]
    return found


def measure_size(root: Path, rows: int, steps: tuple[str, ...], timeout: float) -> dict[str, Measured]:
    copies = rows // 10
    base = root / f"n{rows}"
    gen = time.perf_counter()
    cases_a = write_saved(base / "saved-a", copies, "jsonl")
    cases_b = write_saved(base / "saved-b", copies, "jsonl", variant=True) if {"score_b", "compare"} & set(steps) \
        else None
    cases_csv = write_saved(base / "saved-csv", copies, "csv") if "score_csv" in steps else None
    print(f"  {rows:,} rows generated in {time.perf_counter() - gen:.1f} s "
          f"(cases.jsonl {cases_a.stat().st_size / 1e6:.1f} MB)", flush=True)
    out: dict[str, Measured] = {}
    needs_a = {"score", "compare", "report"} & set(steps)
    if needs_a:
        out["score"] = run_child(["score", "--cases", str(cases_a), "--out", str(base / "run-a")], timeout)
    if cases_csv is not None:
        out["score_csv"] = run_child(["score", "--cases", str(cases_csv), "--out", str(base / "run-csv")], timeout)
    if cases_b is not None:
        out["score_b"] = run_child(["score", "--cases", str(cases_b), "--out", str(base / "run-b")], timeout)
    scored_a = needs_a and out["score"].code == 0
    if "compare" in steps and scored_a and out["score_b"].code == 0:
        out["compare"] = run_child(["compare", str(_run_dir(base / "run-a")), str(_run_dir(base / "run-b"))],
                                   timeout)
    if "report" in steps and scored_a:
        html = base / "report.html"
        got = run_child(["report", str(_run_dir(base / "run-a")), "--out", str(html)], timeout)
        out["report"] = Measured(got.wall_s, got.cpu_s, got.rss_mb, got.code,
                                 html.stat().st_size if html.exists() else None)
    return out


def _seconds(m: Measured, timeout: float) -> str:
    return f"> {timeout:.0f}" if m.code is None else f"{m.wall_s:.2f}"


def _exponent(small: float, big: float, n_small: int, n_big: int) -> str:
    return f"{math.log(big / small) / math.log(n_big / n_small):.2f}" if small > 0 and big > 0 else "-"


LABELS = {"score": "score A", "score_csv": "score A (csv)", "score_b": "score B", "compare": "compare A B",
          "report": "report A"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000],
                        help="rows per run, multiples of 10 (default 10000 100000)")
    parser.add_argument("--big", action="store_true", help="add 1,000,000 rows")
    parser.add_argument("--only", nargs="+", choices=STEPS, default=list(STEPS), help="steps to run (default all)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds before a command is stopped (default 900)")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes + ([1_000_000] if args.big else [])))
    steps = tuple(s for s in STEPS if s in args.only)
    print(f"bench_scale: workshop cases replicated to {', '.join(f'{n:,}' for n in sizes)} rows; steps "
          f"{', '.join(steps)}")
    print(machine_line(), flush=True)
    results: dict[int, dict[str, Measured]] = {}
    with isolated_state("scale") as root:
        for rows in sizes:
            results[rows] = measure_size(root, rows, steps, args.timeout)
            for name, m in results[rows].items():
                print(f"  {rows:,} {LABELS[name]}: {_seconds(m, args.timeout)} s wall, {m.cpu_s:.2f} s CPU, "
                      f"{m.rss_mb:.0f} MB peak RSS, exit {m.code}", flush=True)
    print("wall and CPU seconds and peak RSS of each command in a child process and the processes it starts (os.wait4 "
          "and /proc); rows/s = rows / wall")
    body = []
    for rows in sizes:
        for name, m in results[rows].items():
            size = f"{m.out_bytes / 1e6:.2f}" if m.out_bytes is not None else "-"
            body.append([f"{rows:,}", LABELS[name], _seconds(m, args.timeout), f"{m.cpu_s:.2f}",
                         f"{rows / m.wall_s:,.0f}" if m.code is not None else "-", f"{m.rss_mb:.0f}", size])
    print(table(["rows", "command", "wall s", "CPU s", "rows/s", "peak RSS MB", "HTML MB"], body))
    for small, big in zip(sizes, sizes[1:]):
        parts = []
        for name in steps:
            a, b = results[small].get(name), results[big].get(name)
            if a and b and a.code is not None and b.code is not None:
                parts.append(f"{LABELS[name]} time ~ n^{_exponent(a.wall_s, b.wall_s, small, big)}, "
                             f"RSS ~ n^{_exponent(a.rss_mb, b.rss_mb, small, big)}")
        print(f"growth {small:,} -> {big:,}: " + "; ".join(parts))
    _verdicts(results, args.timeout)
    return 0


def _verdicts(results: dict[int, dict[str, Measured]], timeout: float) -> None:
    lines = []
    at = {n: r for n, r in results.items()}
    if (m := at.get(1_000_000, {}).get("score")) and m.code is not None:
        lines.append(["score 1M peak RSS MB", f"{m.rss_mb:.0f}", "<= 500",
                      verdict(m.rss_mb, 500, higher_is_better=False)])
    if (m := at.get(100_000, {}).get("score")) and m.code is not None:
        rate = 100_000 / m.wall_s
        lines.append(["score 100k rows/s", f"{rate:,.0f}", ">= 10,000", verdict(rate, 10_000, higher_is_better=True)])
    for n, r in sorted(at.items()):
        if (j := r.get("score")) and (c := r.get("score_csv")) and j.code == c.code == 0:
            ratio = j.cpu_s / c.cpu_s
            lines.append([f"score {n:,} JSONL / CSV CPU", f"{ratio:.2f}", "<= 1.5",
                          verdict(ratio, 1.5, higher_is_better=False)])
    if (m := at.get(100_000, {}).get("report")):
        wall = m.wall_s if m.code is not None else float("inf")
        lines.append(["report 100k wall s", _seconds(m, timeout), "<= 10", verdict(wall, 10, higher_is_better=False)])
        if m.out_bytes is not None:
            mb = m.out_bytes / 1e6
            lines.append(["report 100k HTML MB", f"{mb:.2f}", "<= 5", verdict(mb, 5, higher_is_better=False)])
    for n, limit in ((100_000, 15), (1_000_000, 150)):
        if (m := at.get(n, {}).get("compare")):
            wall = m.wall_s if m.code is not None else float("inf")
            lines.append([f"compare {n:,} wall s", _seconds(m, timeout), f"<= {limit}",
                          verdict(wall, limit, higher_is_better=False)])
            if n == 100_000:
                lines.append(["compare 100k peak RSS MB", f"{m.rss_mb:.0f}", "<= 1000",
                              verdict(m.rss_mb, 1000, higher_is_better=False)])
    if lines:
        print(table(["target (issue 31)", "measured", "target", "verdict"], lines))


if __name__ == "__main__":
    raise SystemExit(main())
