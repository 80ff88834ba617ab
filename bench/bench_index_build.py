"""Index build throughput in pages per second, against pypdf's own extraction loop (target >= 0.8x of it).

A PDF of `--pages` pages (about 250 words each) is generated with sample_docs/make_sample_docs.write_text_pdf.
Timed, each as the median of `--repeats` runs after one warm-up:

  raw pypdf            for page in PdfReader(path).pages: page.extract_text()      (the reference)
  read + chunk         pdfrag.pdfs.read_documents + pdfrag.chunking.chunk_pages
  read + chunk + embed chatbot.bot.open_chatbot(docs=...) with a fresh embedding cache each run, against the test
                       server with no delay: adds preflight, the /api/embed round trips (the fake computes a
                       lexical stand-in vector in pure Python), and writing one cache file per chunk

With `--docs PATH` (a PDF or a folder of them, e.g. `sample_docs` for the bundled collection) the same three
paths are timed on those PDFs instead of the generated one; raw pypdf then loops over every PDF in the folder.

Run from the repo root: python bench/bench_index_build.py [--pages 300 --repeats 3] [--docs sample_docs]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from _common import isolated_state, load_pdfgen, machine_line, median_time, synthetic_pages, table, verdict
from pypdf import PdfReader

from chatbot.bot import open_chatbot
from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.ollama_client import ClientSettings
from pdfrag.pdfs import read_documents
from tests.fake_ollama import FakeOllama

TARGET = 0.8  # pages/s of the library path over pages/s of raw pypdf extraction, from the issue


def pdf_files(path: Path) -> list[Path]:
    """The PDFs under `path` (itself when it is a file), sorted, as read_documents finds them."""
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix.lower() == ".pdf")


def raw_extract(path: Path) -> None:
    for pdf in pdf_files(path):
        for page in PdfReader(pdf).pages:
            page.extract_text()


def read_and_chunk(path: Path) -> int:
    return len(chunk_pages([p for d in read_documents(path) for p in d.pages], ChunkSettings()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=300, help="pages in the generated PDF (default 300)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per variant, median (default 3)")
    parser.add_argument("--docs", type=Path, help="time these PDFs (a file or folder) instead of a generated one")
    args = parser.parse_args(argv)
    docs = args.docs.resolve() if args.docs else None  # before isolated_state changes what is around
    pages = sum(len(PdfReader(p).pages) for p in pdf_files(docs)) if docs else args.pages
    what = f"{docs} ({len(pdf_files(docs))} PDFs, {pages} pages)" if docs else f"{pages}-page generated PDF"
    print(f"bench_index_build: {what}, median of {args.repeats} runs")
    print(machine_line())
    with isolated_state("index-build") as root:
        pdf = docs or root / "docs" / "generated.pdf"
        if docs is None:
            pdf.parent.mkdir()
            load_pdfgen().write_text_pdf(pdf, synthetic_pages(args.pages))
        chunks = read_and_chunk(pdf)
        raw = median_time(lambda: raw_extract(pdf), args.repeats)
        ours = median_time(lambda: read_and_chunk(pdf), args.repeats)
        caches = (root / "cache" / str(i) for i in itertools.count())  # a fresh cache: every chunk is embedded
        with FakeOllama() as server:
            full = median_time(lambda: open_chatbot(docs=pdf, client_settings=ClientSettings(host=server.url),
                                                    cache_dir=next(caches)), args.repeats)
            embed_requests = server.count("/api/embed")
    n = pages
    rows = [["raw pypdf extract_text", f"{raw:.3f}", f"{n / raw:.0f}", "1.000", "-", "-"]]
    for name, secs, gate in (("read + chunk", ours, True), ("read + chunk + embed (fake, 0 delay)", full, False)):
        ratio = raw / secs  # pages/s of this path over pages/s of raw extraction
        rows.append([name, f"{secs:.3f}", f"{n / secs:.0f}", f"{ratio:.3f}", f">= {TARGET}" if gate else "-",
                     verdict(ratio, TARGET, higher_is_better=True) if gate else "-"])
    print(table(["path", "seconds", "pages/s", "x raw", "target", "verdict"], rows))
    print(f"{chunks} chunks; {embed_requests // (args.repeats + 1)} embed requests per build; the embed row is "
          f"informational (it includes the test server's own pure-Python embedding work)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
