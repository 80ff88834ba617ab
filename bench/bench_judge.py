"""Judge cost: chat calls per judged answer (target 1) and prompt characters per claim, on the bundled cases,
against the test server; then a rerun's chat calls (target 0).

The answers are the offline baseline's over sample_docs/all_cases.jsonl (no model; BM25 + best sentence), so the
claims are real sentences of the bundled PDFs. The judge's replies follow tests/support/judge_rules.py (a rule, not
a model: "supported" with the sentence sharing most words with the claim). The peer figure is quoted from
issue #22, not measured here: RAGAS 0.4.3's four standard RAG metrics took 8 chat + 2 embed calls and ~31k prompt
characters per case when its replies parsed.
Run from the repo root: python bench/bench_judge.py [--delay 0.0]
"""

from __future__ import annotations

import argparse
import shutil
import time

from _common import SAMPLE_DOCS, isolated_state, machine_line, table, verdict

from harness.evaluate import run_evaluation
from harness.judge.run import JudgeSettings, judge_run
from harness.settings import RunSettings
from tests.fake_ollama import FakeOllama
from tests.support.judge_rules import judge_rule

PEER = "RAGAS 0.4.3, 4 standard metrics (issue #22, quoted): 8 chat + 2 embed calls, ~31,000 prompt chars per case"


def _prompt_chars(server: FakeOllama, since: int) -> int:
    return sum(len(m["content"]) for body in server.chat_bodies()[since:] for m in body["messages"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds the server waits per chat call")
    args = parser.parse_args(argv)
    print(f"bench_judge: offline baseline answers to the bundled cases, judged against the test server "
          f"(delay {args.delay} s)")
    print(machine_line())
    with isolated_state("judge") as root, FakeOllama(delay_s=args.delay) as server:
        cases = root / "cases.jsonl"
        shutil.copy(SAMPLE_DOCS / "all_cases.jsonl", cases)
        run = run_evaluation(RunSettings(system="offline", out=str(root / "runs"), cases=str(cases))).run_dir
        server.chat_rule = judge_rule()
        settings = JudgeSettings(host=server.url, cache_dir=str(root / "cache"))
        start = time.perf_counter()
        first = judge_run(run, root / "cases.reviews.jsonl", settings)
        wall = time.perf_counter() - start
        chars = _prompt_chars(server, 0)
        calls = len(server.chat_bodies())
        again = judge_run(run, root / "cases.reviews.jsonl", settings)
        rerun = len(server.chat_bodies()) - calls
    per_answer = calls / first.answers if first.answers else float("nan")
    rows = [["bundled cases (195)", first.answers, first.claims, calls, f"{per_answer:.2f}",
             f"{chars / first.claims:,.0f}", f"{chars / first.answers:,.0f}", f"{wall:.2f}", rerun,
             again.from_cache, verdict(-per_answer, -1.0, higher_is_better=True) + "/"
             + verdict(-rerun, 0, higher_is_better=True)]]
    print(table(["input", "answers", "claims", "chat calls", "calls/answer", "prompt chars/claim",
                 "prompt chars/answer", "wall s", "rerun calls", "rerun from cache",
                 "verdict (calls/answer <= 1 / rerun 0)"], rows))
    print(f"errors: {len(first.errors)}; embed calls: 0 (the judge embeds nothing)")
    print(f"peer, not measured here: {PEER}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
