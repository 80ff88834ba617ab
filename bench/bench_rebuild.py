"""Rebuilding the index over unchanged documents: embedding requests made (target 0) and time against the first
build.

A generated PDF (`--pages` pages of about 250 words) is indexed twice with one embedding cache directory, against
the test server answering every /api/embed request after `--delay` seconds. Each build is `open_chatbot(docs=...)`,
the path `rag-chat` and `rag-eval run` take: read and hash the PDFs, preflight the server, chunk, then embed what the
cache lacks. The rebuild still has to read the PDFs (their text is the cache key), so its floor is the time of
`read_documents` + `chunk_pages`; the table shows the rebuild against that floor too (no target in the issue).
Run from the repo root: python bench/bench_rebuild.py [--pages 300 --delay 0.2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import isolated_state, load_pdfgen, machine_line, median_time, synthetic_pages, table, verdict

from chatbot.bot import open_chatbot
from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.ollama_client import ClientSettings
from pdfrag.pdfs import read_documents
from tests.fake_ollama import FakeOllama


def build(server: FakeOllama, docs: Path, cache: Path) -> dict:
    """One open_chatbot over `docs`: wall seconds, HTTP requests by path, and the index's own counts."""
    embeds, total = server.count("/api/embed"), server.count()
    start = time.perf_counter()
    bot = open_chatbot(docs=docs, client_settings=ClientSettings(host=server.url), cache_dir=cache)
    wall = time.perf_counter() - start
    return {"wall_s": wall, "embed_requests": server.count("/api/embed") - embeds,
            "requests": server.count() - total, "client_calls": bot.client.calls,
            "counts": bot.index.manifest["counts"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=300, help="pages in the generated PDF (default 300)")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per /api/embed reply (default 0.2)")
    parser.add_argument("--repeats", type=int, default=3, help="timings of the PDF-reading floor (median)")
    args = parser.parse_args(argv)
    print(f"bench_rebuild: {args.pages}-page generated PDF, embed delay {args.delay:g} s per request")
    print(machine_line())
    with isolated_state("rebuild") as root:
        docs = root / "docs"
        docs.mkdir()
        load_pdfgen().write_text_pdf(docs / "generated.pdf", synthetic_pages(args.pages))
        cache = root / "cache" / "embeddings"
        floor = median_time(lambda: chunk_pages([p for d in read_documents(docs) for p in d.pages],
                                                ChunkSettings()), args.repeats)
        with FakeOllama(delay_s=args.delay) as server:
            first = build(server, docs, cache)
            second = build(server, docs, cache)
    ratio = second["wall_s"] / first["wall_s"]
    rows = [
        ["first build", f"{first['wall_s']:.3f}", first["embed_requests"], first["counts"]["embedded"],
         first["counts"]["from_cache"], "-", "-"],
        ["rebuild", f"{second['wall_s']:.3f}", second["embed_requests"], second["counts"]["embedded"],
         second["counts"]["from_cache"], "0 embed requests", verdict(second["embed_requests"], 0,
                                                                     higher_is_better=False)],
    ]
    print(table(["build", "wall s", "embed requests", "embedded", "from cache", "target", "verdict"], rows))
    print(f"rebuild / first build = {ratio:.3f} (no target in the issue; lower is better)")
    print(f"rebuild / floor (read_documents + chunk_pages = {floor:.3f} s) = {second['wall_s'] / floor:.2f}")
    print(f"rebuild HTTP requests: {second['requests']} in all ({second['client_calls']} client calls: preflight); "
          f"{first['counts']['chunks']} chunks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
