"""Wall time of dispatching D distinct chat calls through `HostPool` (pdfrag/hosts.py), one and two servers.

Each test server answers at most `--slots` chats at once (like OLLAMA_NUM_PARALLEL), each after `--delay` seconds,
and the pool gives each server that many worker slots. The work per item is the real answer-path generator
(`ServerGenerator`, per server) behind the answer cache (`CachingGenerator`), with a distinct prompt per call, so
each call is one /api/chat request on a cold cache. Measured:

  one server      S slots:          ideal = D x delay / S            target wall <= 1.15 x ideal
  two servers     S slots each:     ideal = D x delay / (2 S)        target wall <= 1.15 x ideal,
                                                                     and two / one <= 0.6
  warm cache      the two-server pass again: every call is served from the answer cache (target 0 chat requests)

Wall time covers the pool's dispatch of all D items (threads, HTTP through the official client, cache writes);
preflight and server start are outside it. The servers run in this process (as in bench_concurrency).
Run from the repo root: python bench/bench_sweep_pool.py [--delay 0.2 --slots 4 --calls 48]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import isolated_state, machine_line, table, verdict

from chatbot.answer import AnswerSettings
from chatbot.answer_cache import CachingGenerator
from chatbot.bot import ServerGenerator
from pdfrag.hosts import HostPool
from pdfrag.ollama_client import ClientSettings, OllamaClient
from pdfrag.reply_cache import AnswerCache
from tests.fake_ollama import FakeOllama

TARGET = 1.15  # wall / ideal, from the issue
TWO_OVER_ONE = 0.6  # two servers' wall / one server's wall, from the issue
CHAT, EMBED = "qwen3:4b", "nomic-embed-text"


def measure(servers: list[FakeOllama], slots: int, calls: int, cache_root: Path) -> dict:
    """Preflight a pool over `servers`, then time `calls` distinct prompts through it (twice: cold, warm)."""
    pool = HostPool.connect([s.url for s in servers], settings=ClientSettings(backoff_s=0.0), slots=slots)
    info = pool.preflight(chat_model=CHAT, embed_model=EMBED)
    cache = AnswerCache(cache_root)
    generators = {}
    for client, server in zip(pool.clients, info.servers):
        model = server.models[CHAT]
        generators[client.host] = CachingGenerator(ServerGenerator(client, CHAT, model.digest, model.capabilities),
                                                   cache)
    settings = AnswerSettings()
    prompts = [f"Question: distinct call number {i}\n[source: doc#p{i}]\nPassage {i}." for i in range(calls)]

    def work(client: OllamaClient, prompt: str) -> str:
        return generators[client.host].generate(prompt, settings, "", []).content

    def timed_pass() -> tuple[float, int, list[str]]:
        before = sum(s.count("/api/chat") for s in servers)
        start = time.perf_counter()
        served = pool.map(work, prompts)
        wall = time.perf_counter() - start
        return wall, sum(s.count("/api/chat") for s in servers) - before, [x.host for x in served]

    cold, cold_chats, hosts = timed_pass()
    warm, warm_chats, _ = timed_pass()
    return {"cold_s": cold, "cold_chats": cold_chats, "warm_s": warm, "warm_chats": warm_chats,
            "per_host": [hosts.count(s.url) for s in servers], "peaks": [s.peak_chat_in_flight for s in servers]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per chat reply (default 0.2)")
    parser.add_argument("--slots", type=int, default=4, help="chats each server answers at once (default 4)")
    parser.add_argument("--calls", type=int, default=48, help="distinct chat calls (default 48)")
    args = parser.parse_args(argv)
    d, s, n = args.delay, args.slots, args.calls
    print(f"bench_sweep_pool: {n} distinct chat calls, chat delay {d:g} s, {s} slots per server")
    print(machine_line())
    with isolated_state("sweep-pool") as root:
        servers = [FakeOllama(delay_s=d, slots=s).start() for _ in range(2)]
        try:
            one = measure(servers[:1], s, n, root / "cache-one")
            for server in servers:
                server.peak_chat_in_flight = 0
            two = measure(servers, s, n, root / "cache-two")
        finally:
            for server in servers:
                server.stop()
    ideal_one, ideal_two = n * d / s, n * d / (2 * s)
    ratio = two["cold_s"] / one["cold_s"]
    rows = [["one server", s, f"{one['cold_s']:.2f}", f"{ideal_one:.2f}", f"{one['cold_s'] / ideal_one:.3f}",
             f"<= {TARGET}", verdict(one["cold_s"] / ideal_one, TARGET, higher_is_better=False)],
            ["two servers", 2 * s, f"{two['cold_s']:.2f}", f"{ideal_two:.2f}", f"{two['cold_s'] / ideal_two:.3f}",
             f"<= {TARGET}", verdict(two["cold_s"] / ideal_two, TARGET, higher_is_better=False)]]
    print(table(["setup", "total slots", "wall s", "ideal s", "wall/ideal", "target", "verdict"], rows))
    print(f"two servers / one server = {ratio:.3f} (target <= {TWO_OVER_ONE}: "
          f"{verdict(ratio, TWO_OVER_ONE, higher_is_better=False)})")
    print(f"items per server with two: {two['per_host']}; peak chats in flight per server: one {one['peaks']}, "
          f"two {two['peaks']}; chat requests: one {one['cold_chats']}, two {two['cold_chats']}")
    print(f"warm answer cache (same calls again): {two['warm_chats']} chat requests (target 0: "
          f"{'PASS' if two['warm_chats'] == 0 else 'MISS'}), {two['warm_s']:.3f} s for {n} cached replies")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
