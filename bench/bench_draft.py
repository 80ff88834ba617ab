"""Drafting cost: chat calls per accepted case, and a rerun's chat calls (target 0), against the test server.

The issue's budget: one chat call per page plus one per parametric check (a draft that passed verification), so
calls per accepted case = (pages + passed) / accepted. Two inputs:
- the bundled handbook (4 pages) with the scripted rule of tests/support/draft_rules.py: 12 drafts, 7 scripted to fail;
- a generated PDF (`--pages`, about 250 words a page) with a generic rule (below) whose drafts all pass.
"Accepted" here means a reviewer accepting every draft that passed verification (the best case); with real
reviewers the ratio only grows. The generic rule is not a model: for the k-th of `per_page` drafts it quotes the
first 8 words of the page's (k+1)-th sentence, names its 8th word as the fact, and asks
"In <section>, which term goes with <word 2> and <word 4> (item k)?".
Run from the repo root: python bench/bench_draft.py [--pages 40 --delay 0.0]
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

from _common import isolated_state, load_pdfgen, machine_line, synthetic_pages, table, verdict

from harness.drafting.pipeline import run_drafting
from harness.drafting.settings import DraftSettings
from tests.fake_ollama import FakeOllama
from tests.support import draft_rules

_PAGE = re.compile(r"\[page start\]\n(.*?)\n\[page end\]", re.DOTALL)


def generic_rule(body: dict) -> dict:
    """The rule described in the module docstring (parametric prompts get "I do not know.")."""
    content = body["messages"][-1]["content"]
    if "No documents are available" in content:
        return {"answer": "I do not know."}
    page = _PAGE.search(content).group(1)
    per_page = body["format"]["properties"]["drafts"]["maxItems"]
    section = page.split(".", 1)[0]
    sentences = re.split(r"(?<=\.)\s+", page)[1:]
    drafts = []
    for k, sentence in enumerate(sentences[:per_page], start=1):
        words = sentence.rstrip(".").split()[:8]
        drafts.append({"question": f"In {section}, which term goes with {words[1]} and {words[3]} (item {k})?",
                       "quote": " ".join(words), "facts": [words[7]], "type": "other"})
    return {"drafts": drafts}


def measure(server: FakeOllama, docs: Path, out: Path, *, parametric: bool) -> dict:
    # A cache of its own per measurement: the first run starts cold, the rerun finds what the first run stored.
    # --unanswerable 0: the budget measured is the page's and the parametric check's (unanswerable drafts add one
    # call each, 1 in 5 of all drafts by default, and the generic rule below does not write them)
    settings = DraftSettings(docs=str(docs), out=str(out), host=server.url, parametric=parametric,
                             cache_dir=str(out.with_suffix(".cache")), unanswerable=0)
    calls = server.count("/api/chat")
    start = time.perf_counter()
    run = run_drafting(settings)
    wall = time.perf_counter() - start
    first_calls = server.count("/api/chat") - calls
    start = time.perf_counter()
    again = run_drafting(settings)
    rerun_wall = time.perf_counter() - start
    passed = sum(d.verification.passed and d.kind == "answerable" for d in run.drafts)
    return {"pages": len(run.selection.pages), "drafts": len(run.drafts), "passed": passed, "calls": first_calls,
            "expected": len(run.selection.pages) + (passed if parametric else 0), "wall": wall,
            "rerun_calls": server.count("/api/chat") - calls - first_calls, "rerun_wall": rerun_wall,
            "rerun_reported": again.chat_calls,
            "reasons": Counter(r.code for d in run.drafts for r in d.verification.reasons)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=40, help="pages in the generated PDF (default 40)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds the server waits per chat/embed call")
    args = parser.parse_args(argv)
    print(f"bench_draft: handbook (4 pages, scripted rule) and a {args.pages}-page generated PDF (generic rule), "
          f"3 drafts asked per page, server delay {args.delay} s")
    print(machine_line())
    rows, reasons = [], {}
    with isolated_state("draft") as root, FakeOllama(delay_s=args.delay) as server:
        generated = root / "generated"
        generated.mkdir()
        load_pdfgen().write_text_pdf(generated / "generated.pdf", synthetic_pages(args.pages))
        handbook = Path(__file__).resolve().parents[1] / "sample_docs"
        for name, docs, rule in (("handbook", handbook, draft_rules.draft_rule),
                                 ("generated", generated, generic_rule)):
            server.chat_rule = rule
            for parametric in (True, False):
                m = measure(server, docs, root / f"{name}-{parametric}.jsonl", parametric=parametric)
                per_case = m["calls"] / m["passed"] if m["passed"] else float("nan")
                rows.append([name, "on" if parametric else "off", m["pages"], m["drafts"], m["passed"], m["calls"],
                             m["expected"], f"{per_case:.2f}", f"{m['wall']:.2f}", m["rerun_calls"],
                             f"{m['rerun_wall']:.2f}",
                             verdict(-m["rerun_calls"], 0, higher_is_better=True) + "/"
                             + verdict(-m["calls"], -m["expected"], higher_is_better=True)])
                reasons[name] = m["reasons"]
    print(table(["input", "parametric", "pages", "drafts", "passed", "chat calls", "pages+passed",
                 "calls/accepted", "wall s", "rerun calls", "rerun s", "verdict (rerun 0 / calls <= budget)"],
                rows))
    for name, counts in reasons.items():
        print(f"{name}: verification failures " + (", ".join(f"{c} {n}" for c, n in counts.most_common()) or "none"))
    print("calls/accepted = chat calls of the first run / drafts that passed verification (all accepted); "
          "the parametric check costs one call per passed draft")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
