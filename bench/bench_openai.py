"""Scale-out on one URL: the whole bundled evaluation (195 cases) with `--backend openai` against the test server's
OpenAI-compatible side in a child process with S slots and a fixed chat delay d, `--workers` = S.

The server (`python -m tests.fake_ollama --slots S --delay d --embed-delay 0`) answers at most S chat completions
at once, each after d seconds, like an engine with S sequences in flight; embeddings come at once (a real server
embeds a question in milliseconds). Measured per S:

  answering wall   from the end of the index build to the last row (progress marks of `run_evaluation`).
  chats            chat completions the server answered in that phase (its GET /_counts before and after), and the
                   most it answered at once. Not every case asks the model (a case whose retrieval finds nothing to
                   quote from is answered without it), so the ideal is ceil(chats / S) x d, not ceil(cases / S) x d:
                   the second is printed too, and it is why an earlier table read 0.61 "of ideal".
  the client alone the very requests the harness sent in that phase (the test server's GET /_bodies: each chat
                   completion's body, prompt and answer schema included, and the question embeddings, a batch per
                   32 questions), posted by the official `openai` client with nothing of the harness around it,
                   from S threads sharing one `openai.OpenAI` as `--workers` sends them, against the same server:
                   its wall, its CPU per request, and its CPU per case (the floor the harness stands on: a case is
                   a chat and its share of a question batch).
  targets          harness wall <= 1.10 x the client's wall at the same S; harness CPU per case <= 1.3 x the
                   client's CPU for the same requests, per case (issue 31, re-based on that floor: the earlier 2 ms
                   per case sat below what the client itself costs here). Until 2026-12-02 the floor was one small
                   fixed chat body (a 30-character prompt, no schema) per chat and no embeddings, which the
                   harness's requests outweigh; that figure is printed too (`tiny body`). The ideal ratio is
                   printed beside, for reference.
  whole run        wall of the `run_evaluation` call; its fixed setup is reading and hashing the 10 PDFs, the label
                   check of 195 cases, the preflight (/v1/models, /version, a one-token warm-up chat) and the index
                   build (52 chunks, 2 embedding requests; a fresh cache every run, so the same work each time).

CPU is process CPU (every thread of this process; the server is another process). Each S runs `--repeats` times,
each run followed by the client alone, and the fastest of each (wall and CPU apart) is kept: on a shared machine
the least disturbed run is the closest to the cost. Then "threads or asyncio": R
concurrent chat completions (R = the largest S) from R threads and from one asyncio loop with `openai.AsyncOpenAI`.

Run from the repo root: python bench/bench_openai.py [--delay 1 --slots 64 256 --backend openai]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import openai
from _common import REPO, SAMPLE_DOCS, isolated_state, machine_line, table, verdict

from harness.evaluate import run_evaluation
from harness.settings import RunSettings

WALL_OVER_CLIENT = 1.10  # issue 31: harness answering wall / the client's wall, same chats and S
CPU_OVER_CLIENT = 1.30  # issue 31: harness CPU per case / the client's CPU per request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(slots: int, delay: float) -> tuple[subprocess.Popen, str]:
    """The test server in a child process; returns it and its address once it answers."""
    port = free_port()
    child = subprocess.Popen([sys.executable, "-m", "tests.fake_ollama", "--port", str(port), "--slots", str(slots),
                              "--delay", str(delay), "--embed-delay", "0"], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    assert child.stdout is not None
    child.stdout.readline()  # the banner: the server is listening
    return child, f"http://127.0.0.1:{port}"


def counts(url: str) -> dict[str, int]:
    """The test server's own counters (chats answered, most at once)."""
    return httpx2.get(url + "/_counts", timeout=10).json()


def bodies(url: str) -> dict[str, list[dict]]:
    """Every chat completion and embedding body the test server received so far, in arrival order."""
    return httpx2.get(url + "/_bodies", timeout=60).json()


def measure(url: str, backend: str, slots: int, root: Path) -> dict:
    marks: dict[str, tuple[float, float]] = {}
    before: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        now = (time.perf_counter(), time.process_time())
        if stage == "cases" and "answer_start" not in marks:
            before.update(counts(url))  # after the preflight's warm-up chat, before the first case
            before.update({f"{kind}_bodies": len(sent) for kind, sent in bodies(url).items()})
            now = (time.perf_counter(), time.process_time())
            marks["answer_start"] = now
        marks[stage] = now  # the last "cases" mark is the last row

    host = url + "/v1" if backend == "openai" else url
    settings = RunSettings(docs=str(SAMPLE_DOCS), cases=str(SAMPLE_DOCS / "all_cases.jsonl"),
                           out=str(root / "results"), host=host, backend=backend, workers=slots,
                           cache_dir=str(root / f"cache-{time.monotonic_ns()}"))
    start = time.perf_counter()
    result = run_evaluation(settings, progress=progress)
    wall = time.perf_counter() - start
    after, sent = counts(url), bodies(url)
    (t0, c0), (t1, c1) = marks["answer_start"], marks["cases"]
    requests = [("/embeddings", b) for b in sent["embed"][before["embed_bodies"]:]] + \
        [("/chat/completions", b) for b in sent["chat"][before["chat_bodies"]:]]
    return {"wall_s": wall, "answer_s": t1 - t0, "cpu_s": c1 - c0, "setup_s": t0 - start,
            "rows": result.summary.rows, "errored": result.summary.errored,
            "chats": after["chats_answered"] - before["chats_answered"], "peak": after["peak_chat_in_flight"],
            "requests": requests}


_BODY = {"model": "qwen3:4b", "messages": [{"role": "user", "content": "Question: hotel limit?"}],
         "temperature": 0, "seed": 42, "max_tokens": 64}


def client_alone(url: str, requests: int | list[tuple[str, dict]], threads: int) -> tuple[float, float]:
    """(CPU ms per request, wall s) of `requests` (a number of small fixed chats, or (path, body) pairs) from
    `threads` threads sharing one client."""
    pairs = [("/chat/completions", _BODY)] * requests if isinstance(requests, int) else requests
    cpu_ms, wall, _ = replay(url + "/v1", pairs, threads)
    return cpu_ms, wall


def replay(base_url: str, requests: list[tuple[str, dict]], threads: int, *,
           timeout: float = 600) -> tuple[float, float, list]:
    """(CPU ms per request, wall s, reply bodies as text) of posting each (path, body) of `requests` to `base_url`
    from `threads` threads sharing one official `openai` client, with nothing of the harness around it."""
    sync = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0, timeout=timeout)
    with ThreadPoolExecutor(threads) as pool:
        sync.get("/models", cast_to=httpx2.Response)  # one connection open first, as the harness's preflight leaves
        c0, t0 = time.process_time(), time.perf_counter()
        replies = list(pool.map(lambda pair: sync.post(pair[0], body=pair[1], cast_to=httpx2.Response).text,
                                requests))
        out = ((time.process_time() - c0) / len(requests) * 1000, time.perf_counter() - t0, replies)
    sync.close()
    return out


def transport_probe(url: str, requests: int) -> dict[str, tuple[float, float]]:
    """{"threads" | "asyncio": (CPU ms per request, wall s)} for `requests` concurrent chat completions."""
    body = _BODY
    out = {"threads": client_alone(url, requests, requests)}

    async def gather() -> None:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="EMPTY", max_retries=0)
        await asyncio.gather(*(client.post("/chat/completions", body=body, cast_to=httpx2.Response)
                               for _ in range(requests)))
        await client.close()

    c0, t0 = time.process_time(), time.perf_counter()
    asyncio.run(gather())
    out["asyncio"] = ((time.process_time() - c0) / requests * 1000, time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds per chat reply (default 1)")
    parser.add_argument("--slots", type=int, nargs="+", default=[64, 256], help="server slots = --workers")
    parser.add_argument("--backend", choices=["openai", "ollama"], default="openai",
                        help="the API the harness speaks to the server (default openai)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per S, each followed by the client alone; the fastest of each is kept (default 3)")
    args = parser.parse_args(argv)
    d = args.delay
    print(f"bench_openai: bundled evaluation (195 cases), --backend {args.backend}, chat delay {d:g} s, "
          f"server in a child process")
    print(machine_line())
    rows, notes = [], []
    with isolated_state("openai") as root:
        for s in args.slots:
            child, url = start_server(s, d)
            try:
                runs = []
                for _ in range(args.repeats):  # interleaved, so that a busy moment hits both alike
                    m = measure(url, args.backend, s, root)
                    runs.append((m, client_alone(url, m["requests"], s), client_alone(url, m["chats"], s)))
                m = min((r[0] for r in runs), key=lambda r: r["answer_s"])
                m = {**m, "cpu_s": min(r[0]["cpu_s"] for r in runs)}
                alone_cpu, alone_wall = min(r[1][0] for r in runs), min(r[1][1] for r in runs)
                tiny_cpu = min(r[2][0] for r in runs)
                probe = transport_probe(url, s) if s == max(args.slots) else {}
            finally:
                child.terminate()
                child.wait()
            ideal, by_cases = math.ceil(m["chats"] / s) * d, math.ceil(m["rows"] / s) * d
            cpu_ms = m["cpu_s"] / m["rows"] * 1000
            alone_case = alone_cpu * len(m["requests"]) / m["rows"]  # the same requests' CPU, per case
            wall_ratio, cpu_ratio = m["answer_s"] / alone_wall, cpu_ms / alone_case
            rows.append([s, m["chats"], m["peak"], f"{m['answer_s']:.2f}", f"{ideal:.2f} ({by_cases:.2f})",
                         f"{m['answer_s'] / ideal:.3f} ({m['answer_s'] / by_cases:.3f})", f"{alone_wall:.2f}",
                         f"{wall_ratio:.3f}", verdict(wall_ratio, WALL_OVER_CLIENT, higher_is_better=False),
                         f"{cpu_ms:.2f}", f"{alone_case:.2f}", f"{cpu_ratio:.2f}",
                         verdict(cpu_ratio, CPU_OVER_CLIENT, higher_is_better=False), f"{m['wall_s']:.2f}",
                         f"{m['setup_s']:.2f}"])
            embeds = sum(path == "/embeddings" for path, _ in m["requests"])
            notes.append(f"S={s}: {m['rows']} rows, {m['errored']} errored; {m['chats']} chats in the answering "
                         f"phase for {m['rows']} cases, at most {m['peak']} at once; the client alone sent the same "
                         f"{len(m['requests'])} requests ({embeds} question-embedding batches): {alone_cpu:.2f} ms CPU "
                         f"per request; with a tiny fixed chat body instead: {tiny_cpu:.2f} ms per request, so "
                         f"CPU/client {cpu_ms / tiny_cpu:.2f} against it")
            notes += [f"{s} concurrent chat completions via {how}: {cpu:.2f} ms CPU per request, wall {wall:.2f} s "
                      f"(ideal {d:g} s)" for how, (cpu, wall) in probe.items()]
    print(table(["S=workers", "chats", "peak", "answer s", "ideal s (by cases)", "answer/ideal (by cases)",
                 "client alone s", "answer/client", f"<= {WALL_OVER_CLIENT}", "CPU ms/case",
                 "client CPU ms/case", "CPU/client", f"<= {CPU_OVER_CLIENT}", "whole run s", "setup s"], rows))
    for note in notes:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
