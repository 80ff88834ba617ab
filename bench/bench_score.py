"""`rag-eval score` throughput: saved rows scored per second, on `--rows` generated saved cases (default 100k).

Generates, in the JSONL layout of harness/saved.py (or `--layout csv`): `--chunks` chunks, `--rows` cases (each with
saved retrieved ids, three cited/expected ids, two required points, a short answer) and `--claims-per-case`
annotated claims per case. Times, each once:

  load      harness.saved.load_saved (parse, schema-check and cross-check every line)
  score     harness.score.score_outputs on the loaded outputs (the five checks and the summary)
  load+score the work of harness.score.score_saved, the library call behind `rag-eval score`
  write     harness.score.write_outputs (rows, summary and chart files), at the full size only
  --cli     optionally, the `rag-eval score` command itself in a fresh process (startup, report and files too)

The `--probe` sizes run first (with claims) to show how the time grows with the rows. When they project the full
size beyond `--max-seconds`, the full size is timed without a claims file instead, and the projection is printed.
The issue sets no throughput target: the table shows rows per second.
Run from the repo root: python bench/bench_score.py [--rows 100000 --claims-per-case 1]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, isolated_state, machine_line, table

from harness.saved import load_saved
from harness.score import score_outputs, write_outputs

_PHRASES = ["48 hours", "full account credit", "five calendar days", "a colleague", "the waiting list", "EUR 160",
            "two weeks", "the HR portal", "25 days", "31 March", "a medical certificate", "the third day"]


def _records(rows: int, chunks: int, claims_per_case: int, seed: int = 11):
    rng = random.Random(seed)
    chunk_recs = [{"chunk_id": f"C{i}", "topic": f"topic {i % 17}",
                   "text": f"Policy {i}: " + " ".join(rng.choice(_PHRASES) for _ in range(12)) + "."}
                  for i in range(chunks)]
    cases, claims = [], []
    for i in range(rows):
        ids = [f"C{j}" for j in rng.sample(range(chunks), 4)]
        abstain = i % 10 == 9
        points = [rng.choice(_PHRASES), [rng.choice(_PHRASES), rng.choice(_PHRASES)]]
        answer = "" if abstain else f"Case {i}: " + " and ".join(rng.choice(_PHRASES) for _ in range(3)) + "."
        cases.append({"case_id": f"Q{i}", "question": f"What does policy {i} say about {rng.choice(_PHRASES)}?",
                      "expected_chunk_ids": [] if abstain else ids[:2], "required_points": [] if abstain else points,
                      "candidate_answer": answer, "cited_chunk_ids": [] if abstain else [ids[0], ids[3]],
                      "should_abstain": abstain, "candidate_abstains": abstain and i % 20 == 19,
                      "retrieved_chunk_ids": ids})
        for c in range(claims_per_case if not abstain else 0):
            claims.append({"case_id": f"Q{i}", "claim": f"Claim {c} of case {i}.",
                           "support_chunk_ids": [ids[c % 4]] if c % 3 != 2 else []})
    return chunk_recs, cases, claims


def _csv_cell(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "|".join(";".join(v) if isinstance(v, list) else v for v in value)
    return value


def write_saved(folder: Path, rows: int, chunks: int, claims_per_case: int, layout: str) -> dict[str, Path | None]:
    folder.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path | None] = {}
    for role, records in zip(("chunks", "cases", "claims"), _records(rows, chunks, claims_per_case)):
        if not records:
            paths[role] = None
            continue
        path = paths[role] = folder / f"{role}.{layout}"
        with open(path, "w", encoding="utf-8", newline="") as fh:
            if layout == "jsonl":
                fh.writelines(json.dumps(r) + "\n" for r in records)
            else:
                writer = csv.writer(fh)
                writer.writerow(list(records[0]))
                writer.writerows([_csv_cell(v) for v in r.values()] for r in records)
    return paths


def time_cli(paths: dict[str, Path | None], out: Path) -> float:
    """Wall seconds of `rag-eval score --cases ... --out ...` in a fresh process, its report sent to /dev/null."""
    cmd = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())", "score",
           "--cases", str(paths["cases"]), "--out", str(out)]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(root: Path, rows: int, chunks: int, claims_per_case: int, layout: str, *, write: bool,
            cli: bool = False) -> dict:
    paths = write_saved(root / f"saved-{rows}-{layout}", rows, chunks, claims_per_case, layout)
    start = time.perf_counter()
    saved = load_saved(paths["cases"], paths["chunks"], paths["claims"])
    loaded = time.perf_counter()
    result = score_outputs(saved)
    scored = time.perf_counter()
    write_s = None
    if write:
        write_outputs(result, root / f"out-{rows}")
        write_s = time.perf_counter() - scored
    if len(result.rows) != rows:  # every case must yield a row
        raise RuntimeError(f"{len(result.rows)} score rows for {rows} cases")
    return {"rows": rows, "load_s": loaded - start, "score_s": scored - loaded, "total_s": scored - start,
            "write_s": write_s, "claims": len(saved.claims),
            "cli_s": time_cli(paths, root / f"cli-out-{rows}") if cli else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="saved cases (default 100000)")
    parser.add_argument("--chunks", type=int, default=1_000, help="saved chunks (default 1000)")
    parser.add_argument("--claims-per-case", type=int, default=1, help="annotated claims per answered case (default 1)")
    parser.add_argument("--layout", choices=("jsonl", "csv"), default="jsonl")
    parser.add_argument("--probe", type=int, nargs="+", default=[2_000, 4_000, 8_000],
                        help="smaller sizes measured first, to show how the time grows (default 2000 4000 8000)")
    parser.add_argument("--cli", action="store_true",
                        help="also time the `rag-eval score` command itself on the full size, in a fresh process")
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="when the probes project the full size with claims beyond this many seconds, time "
                             "it without the claims file instead (default 60)")
    args = parser.parse_args(argv)
    print(f"bench_score: {args.rows:,} saved cases ({args.layout}), {args.chunks:,} chunks, "
          f"{args.claims_per_case} claim(s) per answered case")
    print(machine_line())
    with isolated_state("score") as root:
        probes = [measure(root, n, args.chunks, args.claims_per_case, args.layout, write=False)
                  for n in sorted(args.probe) if n < args.rows]
        projected = _project(probes, args.rows)
        full = projected is None or projected <= args.max_seconds or args.claims_per_case == 0
        last = measure(root, args.rows, args.chunks, args.claims_per_case if full else 0, args.layout, write=True,
                       cli=args.cli)
    results = probes + [last]
    rows = [[f"{r['rows']:,}", f"{r['claims']:,}", f"{r['load_s']:.2f}", f"{r['score_s']:.2f}", f"{r['total_s']:.2f}",
             f"{r['rows'] / r['total_s']:,.0f}", "-" if r["write_s"] is None else f"{r['write_s']:.2f}"]
            for r in results]
    print(table(["rows", "claims", "load s", "score s", "load+score s", "rows/s", "write s"], rows))
    same_setup = probes + [last] if full else probes  # the last row counts only if it has the claims too
    if len(same_setup) >= 2:
        _growth(same_setup)
    if last["cli_s"] is not None:
        print(f"`rag-eval score --cases ... --out ...` on {last['rows']:,} rows: {last['cli_s']:.2f} s in a fresh process "
              f"= {last['rows'] / last['cli_s']:,.0f} rows/s (startup, load, score, report, files)")
    if not full:
        print(f"{args.rows:,} rows WITH claims NOT RUN: the probes project about {projected:,.0f} s (> --max-seconds "
              f"{args.max_seconds:g}; an underestimate if the growth is still steepening); the last row has no "
              f"claims file. Run it anyway with --max-seconds {int(projected * 3)}")
    return 0


def _exponent(a: dict, b: dict, step: str) -> float:
    """b in t = c * n^b between two measurements of `step`: 1 is linear, 2 quadratic."""
    return math.log(b[step] / a[step]) / math.log(b["rows"] / a["rows"])


def _project(probes: list[dict], rows: int) -> float | None:
    """The load + score time at `rows`, each step extrapolated from the last two probes by its own power law."""
    if len(probes) < 2:
        return None
    a, b = probes[-2:]
    return sum(b[step] * (rows / b["rows"]) ** _exponent(a, b, step) for step in ("load_s", "score_s"))


def _growth(probes: list[dict]) -> None:
    first, last = probes[0], probes[-1]
    parts = [f"{step[:-2]} ~ n^{_exponent(first, last, step):.2f}" for step in ("load_s", "score_s", "total_s")]
    print(f"growth from {first['rows']:,} to {last['rows']:,} rows: {', '.join(parts)} (1.0 = linear, 2.0 = quadratic)")


if __name__ == "__main__":
    raise SystemExit(main())
