"""Wall time of `run_evaluation` against the ideal `cases x delay / slots`, and against the sequential loop.

The test server answers at most `--slots` chats at once (like OLLAMA_NUM_PARALLEL), each after `--delay` seconds.
The shipped fake (tests/fake_ollama.py) sleeps the same `delay_s` before every /api/embed reply too, with no slot
limit, so every case costs one delayed query embedding plus one delayed chat. A real Ollama embeds a question in
milliseconds while a chat takes seconds, so the issue's ideal `cases x delay / slots` assumes the chat is the only
slow call. The fake has no separate embed delay, so this benchmark measures two setups:

  chat-only delay   the test server's `embed_delay_s = 0` keeps the chat delay and answers embeds at once;
                    ideal = cases x delay / slots (the issue's target, <= 1.15x).
  fake as shipped   embeds are delayed too; with workers = slots each worker waits for its query embedding and
                    then its chat, so the ideal is cases x 2 x delay / slots, plus one delay per embedding batch of
                    the index build. With workers = 2 x slots the embeds overlap other workers' chats: the ideal
                    is then cases x delay / slots + one delay for the first query embedding + the index build.

Wall time is the whole `run_evaluation` call (reading the PDF, preflight, index build, answering, writing rows).
The documents are sample_docs/handbook.pdf and its cases unless `--docs` and `--cases-from` name others (e.g.
`--docs sample_docs --cases-from sample_docs/all_cases.jsonl --cases 195`: the whole bundle).
Run from the repo root: python bench/bench_concurrency.py [--delay 0.2 --slots 4 --cases 40]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from _common import SAMPLE_DOCS, isolated_state, machine_line, table, verdict

from harness.evaluate import run_evaluation
from harness.settings import RunSettings
from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.pdfs import read_documents
from tests.fake_ollama import FakeOllama

TARGET = 1.15  # wall / ideal, from the issue
DOCS = SAMPLE_DOCS / "handbook.pdf"

def write_cases(path: Path, count: int, source: Path = SAMPLE_DOCS / "cases.jsonl") -> None:
    """`count` cases: `source` (default sample_docs/cases.jsonl) repeated, ids made unique with a `~n` suffix."""
    base = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("//")]
    lines = []
    for i in range(count):
        case = dict(base[i % len(base)])
        case["id"] = f"{case['id']}~{i // len(base) + 1}"
        lines.append(json.dumps(case))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def measure(server: FakeOllama, root: Path, cases: Path, workers: int, chunk_size: int, docs: Path = DOCS) -> dict:
    """One evaluation; returns wall seconds, the answering phase and what the server saw."""
    marks: dict[str, float] = {}

    def progress(stage: str, done: int, total: int) -> None:
        marks[stage] = time.perf_counter()  # the last "embedding" mark is the end of the index build

    settings = RunSettings(docs=str(docs), cases=str(cases), out=str(root / "results"), host=server.url,
                           workers=workers, chunk_size=chunk_size, chunk_overlap=min(200, chunk_size // 4),
                           cache_dir=str(root / f"cache-{time.monotonic_ns()}"))  # fresh cache: same work each run
    before_chat, before_embed = server.count("/api/chat"), server.count("/api/embed")
    server.peak_chat_in_flight = 0
    start = time.perf_counter()
    result = run_evaluation(settings, progress=progress)
    wall = time.perf_counter() - start
    return {"wall_s": wall, "answer_s": time.perf_counter() - marks.get("embedding", start),
            "build_s": marks.get("embedding", start) - start,
            "rows": result.summary.rows, "errored": result.summary.errored,
            "chats": server.count("/api/chat") - before_chat, "embeds": server.count("/api/embed") - before_embed,
            "peak_chats": server.peak_chat_in_flight}


def build_batches(chunk_size: int, docs: Path = DOCS) -> int:
    """How many /api/embed requests the index build makes (chunks / batch size)."""
    chunks = chunk_pages([p for d in read_documents(docs) for p in d.pages],
                         ChunkSettings(chunk_size, min(200, chunk_size // 4)))
    return math.ceil(len(chunks) / RunSettings.batch_size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per chat reply (default 0.2)")
    parser.add_argument("--slots", type=int, default=4, help="chats answered at once by the server (default 4)")
    parser.add_argument("--cases", type=int, default=40, help="cases to evaluate (default 40)")
    parser.add_argument("--chunk-size", type=int, default=ChunkSettings.size_chars,
                        help=f"chunk size in characters (default {ChunkSettings.size_chars})")
    parser.add_argument("--skip-shipped", action="store_true", help="only the chat-only-delay setup")
    parser.add_argument("--docs", type=Path, default=DOCS, help="PDF file or folder (default sample_docs/handbook.pdf)")
    parser.add_argument("--cases-from", type=Path, default=SAMPLE_DOCS / "cases.jsonl",
                        help="cases file repeated to --cases cases (default sample_docs/cases.jsonl)")
    args = parser.parse_args(argv)
    docs = args.docs.resolve()
    d, s, n = args.delay, args.slots, args.cases
    print(f"bench_concurrency: {n} cases, chat delay {d:g} s, {s} slots, {docs.name}, chunk size {args.chunk_size}")
    print(machine_line())
    rows, notes = [], []
    with isolated_state("concurrency") as root:
        cases = root / "cases.jsonl"
        write_cases(cases, n, args.cases_from.resolve())
        batches = build_batches(args.chunk_size, docs)
        with FakeOllama(delay_s=d, slots=s) as server:
            server.embed_delay_s = 0.0
            par = measure(server, root, cases, s, args.chunk_size, docs)
            seq = measure(server, root, cases, 1, args.chunk_size, docs)
        ideal = n * d / s
        rows.append(["chat-only delay", s, f"{par['wall_s']:.2f}", f"{ideal:.2f}", f"{par['wall_s'] / ideal:.3f}",
                     f"<= {TARGET}", verdict(par["wall_s"] / ideal, TARGET, higher_is_better=False)])
        rows.append(["chat-only delay", 1, f"{seq['wall_s']:.2f}", f"{n * d:.2f}", f"{seq['wall_s'] / (n * d):.3f}",
                     "-", "-"])
        notes.append(f"chat-only delay: speed-up over the sequential loop (workers=1) = "
                     f"{seq['wall_s'] / par['wall_s']:.2f}x (ideal {s}x); "
                     f"answering phase {par['answer_s']:.2f} s "
                     f"of {par['wall_s']:.2f} s; peak chats in flight {par['peak_chats']} (slots {s}); "
                     f"{par['chats']} chat + {par['embeds']} embed requests; {par['rows']} rows, "
                     f"{par['errored']} errored")
        if not args.skip_shipped:
            with FakeOllama(delay_s=d, slots=s) as server:
                shipped = measure(server, root, cases, s, args.chunk_size, docs)
                shipped_seq = measure(server, root, cases, 1, args.chunk_size, docs)
                wide = measure(server, root, cases, 2 * s, args.chunk_size, docs)
            ideal_shipped = batches * d + n * 2 * d / s
            ideal_wide = batches * d + d + n * d / s
            seq_ideal = batches * d + n * 2 * d
            rows.append(["fake as shipped", s, f"{shipped['wall_s']:.2f}", f"{ideal_shipped:.2f}",
                         f"{shipped['wall_s'] / ideal_shipped:.3f}", f"<= {TARGET}",
                         verdict(shipped["wall_s"] / ideal_shipped, TARGET, higher_is_better=False)])
            rows.append(["fake as shipped", 1, f"{shipped_seq['wall_s']:.2f}", f"{seq_ideal:.2f}",
                         f"{shipped_seq['wall_s'] / seq_ideal:.3f}", "-", "-"])
            rows.append(["fake as shipped", 2 * s, f"{wide['wall_s']:.2f}", f"{ideal_wide:.2f}",
                         f"{wide['wall_s'] / ideal_wide:.3f}", f"<= {TARGET}",
                         verdict(wide["wall_s"] / ideal_wide, TARGET, higher_is_better=False)])
            notes.append(f"fake as shipped: against the issue's ideal n*d/s = {ideal:.2f} s the workers={s} run is "
                         f"{shipped['wall_s'] / ideal:.2f}x and the workers={2 * s} run {wide['wall_s'] / ideal:.2f}x; "
                         f"speed-up over workers=1: {shipped_seq['wall_s'] / shipped['wall_s']:.2f}x; "
                         f"index build {batches} embed batch(es)")
    print(table(["setup", "workers", "wall s", "ideal s", "wall/ideal", "target", "verdict"], rows))
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
