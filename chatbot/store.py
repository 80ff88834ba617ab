"""Small file helpers: writes that never leave a half-written file behind, and where the cache folder is."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file beside `path`, fsync, then rename over it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The cache folder every command uses: `--cache-dir` when given, else `default_cache_dir()`. It holds
    `embeddings/`, `pages/`, `answers/` and `draft-replies/`."""
    return Path(cache_dir) if cache_dir else default_cache_dir()


def default_cache_dir() -> Path:
    """$PDF_RAG_EVAL_CACHE, else $XDG_CACHE_HOME/pdf-rag-eval, else ~/.cache/pdf-rag-eval."""
    if os.environ.get("PDF_RAG_EVAL_CACHE"):
        return Path(os.environ["PDF_RAG_EVAL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pdf-rag-eval"
