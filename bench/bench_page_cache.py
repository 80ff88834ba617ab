"""The second `rag-eval check` over unchanged PDFs (issue #20 item 18): whole-process wall time of a cold check
(empty cache: pypdf reads every page) against warm ones (page text from the cache), and the pages pypdf read in
each (target: 0 on the second).

Documents: the bundled sample (51 pages: handbook.pdf and collection/) plus a generated `--pages`-page PDF, with
the bundled 195 cases (`sample_docs/all_cases.jsonl`). Pages read are counted in-process through the cache's
counter; the warm whole-process run is repeated once with pypdf made unimportable, which can only succeed if it
reads no page with pypdf. Run from the repo root: python bench/bench_page_cache.py [--pages 200 --runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, SAMPLE_DOCS, isolated_state, load_pdfgen, machine_line, synthetic_pages, table, verdict

from pdfrag.page_cache import PageCache
from pdfrag.pdfs import read_documents

CHECK = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
BLOCKED = "import sys; sys.modules['pypdf'] = None; " + CHECK.removeprefix("import sys; ")


def check(code: str, docs: Path, cache: Path) -> float:
    """Seconds of one whole-process `rag-eval check` (fails loudly if the check does)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, "check", "--docs", str(docs), "--cases",
                    str(SAMPLE_DOCS / "all_cases.jsonl"), "--cache-dir", str(cache)], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=200, help="pages of the generated PDF (default 200)")
    parser.add_argument("--runs", type=int, default=5, help="timed cold and warm checks each (default 5; median)")
    args = parser.parse_args(argv)
    print(machine_line())
    with isolated_state("page-cache") as root:
        docs = root / "docs"
        shutil.copytree(SAMPLE_DOCS, docs, ignore=shutil.ignore_patterns("*.py", "*.md", "*.toml", "workshop"))
        load_pdfgen().write_text_pdf(docs / "generated.pdf", synthetic_pages(args.pages))
        pages = sum(len(d.pages) for d in read_documents(docs))
        cold, warm = [], []
        for n in range(args.runs):
            cold.append(check(CHECK, docs, root / f"cold-{n}"))
            warm.append(check(CHECK, docs, root / "cold-0"))
        blocked = check(BLOCKED, docs, root / "cold-0")
        first, second = PageCache(root / "count" / "pages"), PageCache(root / "count" / "pages")
        read_documents(docs, cache=first)
        read_documents(docs, cache=second)
    print(f"bench_page_cache: rag-eval check, 195 cases over {pages} pages, median of {args.runs} whole-process runs")
    rows = [["first check (empty cache)", f"{statistics.median(cold):.2f}", first.pages_extracted, "-"],
            ["second check (unchanged PDFs)", f"{statistics.median(warm):.2f}", second.pages_extracted,
             verdict(-second.pages_extracted, 0, higher_is_better=True) + " (0 pages read)"],
            ["second check, pypdf unimportable", f"{blocked:.2f}", "0 (it ran)", "-"]]
    print(table(["command", "wall s", "pages read by pypdf", "target"], rows))
    print(f"second / first: {statistics.median(warm) / statistics.median(cold):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
