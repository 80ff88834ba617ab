"""Shared bits of the benchmarks: repo root on sys.path, isolated temp state, timing, tables and verdicts.

Benchmarks are measurements, not tests: they print what they measured and a PASS/MISS against the issue's target,
and exit 0 either way.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # so `tests.fake_ollama`, `chatbot` and `harness` import from this checkout
    sys.path.insert(0, str(REPO))

SAMPLE_DOCS = REPO / "sample_docs"


@contextmanager
def isolated_state(prefix: str) -> Iterator[Path]:
    """A temp directory that holds the embedding cache and HOME for the duration: nothing touches the user's
    home or their real cache, and OLLAMA_HOST cannot point the benchmark at a real server."""
    saved = {k: os.environ.get(k) for k in ("PDF_RAG_EVAL_CACHE", "HOME", "OLLAMA_HOST")}
    with tempfile.TemporaryDirectory(prefix=f"bench-{prefix}-") as tmp:
        root = Path(tmp)
        os.environ["PDF_RAG_EVAL_CACHE"] = str(root / "cache")
        os.environ["HOME"] = str(root / "home")
        os.environ.pop("OLLAMA_HOST", None)
        try:
            yield root
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def load_pdfgen():
    """sample_docs/make_sample_docs.py, imported by path (sample_docs is not a package)."""
    spec = importlib.util.spec_from_file_location("make_sample_docs", SAMPLE_DOCS / "make_sample_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_WORDS = ("policy employee travel expense approval manager receipt leave request office equipment training budget "
          "claim report deadline contract supplier invoice payment review audit security access account project "
          "schedule meeting record holiday overtime salary benefit pension insurance vehicle mileage hotel night "
          "meal allowance laptop phone network password backup incident safety health workplace remote team").split()


def synthetic_pages(count: int, words_per_page: int = 250, seed: int = 7) -> list[str]:
    """Deterministic English-like pages of about `words_per_page` words, in sentences of 8-16 words from a small
    vocabulary. Each page starts with its own section word, so no two pages (and chunks) are identical."""
    import random

    rng = random.Random(seed)
    pages = []
    for number in range(1, count + 1):
        sentences, words = [], 1
        while words < words_per_page:
            n = rng.randint(8, 16)
            sentences.append(" ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + ".")
            words += n
        pages.append(f"Section{number}. " + " ".join(sentences))
    return pages


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def median_time(fn: Callable[[], object], repeats: int, *, warmup: int = 1) -> float:
    """Median wall time of `fn` in seconds over `repeats` calls, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def verdict(value: float, target: float, *, higher_is_better: bool) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "PASS" if ok else "MISS"


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A plain fixed-width table; numbers are rendered by the caller."""
    cells = [[str(c) for c in row] for row in [headers, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def machine_line() -> str:
    """One line saying where the numbers came from."""
    import numpy

    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"machine: {os.cpu_count()} CPUs ({cpu}), RAM {mem}, Python {platform.python_version()}, "
            f"numpy {numpy.__version__}; load average {load} at start (other processes skew timings)")
