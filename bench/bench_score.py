"""`rag-eval score` throughput: saved rows scored per second, on `--rows` generated saved cases (default 100k).

Generates, in the JSONL layout of harness/saved/layout.py (or `--layout csv`): `--chunks` chunks, `--rows` cases
(each with saved retrieved ids, three cited/expected ids, two required points, a short answer) and
`--claims-per-case` annotated claims per case. Times, each once:

  load      harness.saved.layout.load_saved (parse, schema-check and cross-check every line)
  score     harness.saved.to_run.score_outputs on the loaded outputs (the five checks and the summary)
  load+score the work of harness.saved.to_run.score_saved, the library call behind `rag-eval score`
  write     harness.saved.to_run.write_run (rows, summary and chart files), at the full size only
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
import random
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, isolated_state, machine_line, table

from harness.saved.layout import load_saved
from harness.saved.to_run import score_outputs, write_run

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
    # CPU seconds of this process: the work itself, less skewed by whatever else the machine runs.
    start = time.process_time()
    saved = load_saved(paths["cases"], paths["chunks"], paths["claims"])
    loaded = time.process_time()
    result = score_outputs(saved)
    scored = time.process_time()
    write_s = None
    if write:
        write_run(result, root / f"out-{rows}-{layout}")
        write_s = time.process_time() - scored
    if len(result.rows) != rows:  # every case must yield a row
        raise RuntimeError(f"{len(result.rows)} score rows for {rows} cases")
    return {"rows": rows, "layout": layout, "load_s": loaded - start, "score_s": scored - loaded,
            "total_s": scored - start, "write_s": write_s, "claims": len(saved.claims),
            "cli_s": time_cli(paths, root / f"cli-out-{rows}") if cli else None}


TARGET_ROWS_PER_S = 20_000  # issue #10: loading + scoring 100k JSONL rows
TARGET_JSONL_OVER_CSV = 1.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="saved cases (default 100000)")
    parser.add_argument("--chunks", type=int, default=1_000, help="saved chunks (default 1000)")
    parser.add_argument("--claims-per-case", type=int, default=1, help="annotated claims per answered case (default 1)")
    parser.add_argument("--cli", action="store_true",
                        help="also time the `rag-eval score` command itself on the JSONL rows, in a fresh process")
    args = parser.parse_args(argv)
    print(f"bench_score: {args.rows:,} saved cases in both layouts, {args.chunks:,} chunks, "
          f"{args.claims_per_case} claim(s) per answered case")
    print(machine_line())
    with isolated_state("score") as root:
        results = [measure(root, args.rows, args.chunks, args.claims_per_case, layout, write=True,
                           cli=args.cli and layout == "jsonl") for layout in ("jsonl", "csv")]
    print("times are CPU seconds of the benchmark process (time.process_time)")
    print(table(["layout", "rows", "claims", "load s", "score s", "load+score s", "rows/s", "write s"],
                [[r["layout"], f"{r['rows']:,}", f"{r['claims']:,}", f"{r['load_s']:.2f}", f"{r['score_s']:.2f}",
                  f"{r['total_s']:.2f}", f"{r['rows'] / r['total_s']:,.0f}", f"{r['write_s']:.2f}"]
                 for r in results]))
    jsonl, csv_ = results
    rate = jsonl["rows"] / jsonl["total_s"]
    print(f"JSONL load+score: {rate:,.0f} rows/s = {rate / TARGET_ROWS_PER_S:.2f}x the target of "
          f"{TARGET_ROWS_PER_S:,} rows/s (>= 1.00 meets it)")
    print(f"JSONL / CSV load+score time: {jsonl['total_s'] / csv_['total_s']:.2f} (target <= "
          f"{TARGET_JSONL_OVER_CSV})")
    if jsonl["cli_s"] is not None:
        print(f"`rag-eval score --cases ... --out ...` on {jsonl['rows']:,} rows: {jsonl['cli_s']:.2f} s in a fresh "
              f"process = {jsonl['rows'] / jsonl['cli_s']:,.0f} rows/s (startup, load, score, report, files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
