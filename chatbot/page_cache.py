"""Extracted page text, cached by the PDF's SHA-256 and the pypdf version that extracted it.

Reading 200 pages with pypdf takes seconds; every command (check, run, draft, draft cases, review) reads the
same unchanged PDFs again. An entry is `pages/pypdf-<version>/<sha[:2]>/<sha>.json` under the cache folder
(`--cache-dir`), holding the text of every page: the same bytes under the same pypdf give the same text, so
a hit needs no pypdf at all, and another pypdf (whose text may differ) never sees this one's entries.
"""

from __future__ import annotations

import json
from pathlib import Path

from .store import atomic_write_text, cache_root
from .versions import pypdf_version


class PageCache:
    """Page texts by file SHA-256 under one pypdf version. `hits`, `stored` and `pages_extracted` count this
    object's use (pages extracted = pages that pypdf read because the cache lacked their file)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.hits = self.stored = self.pages_extracted = 0

    @classmethod
    def at(cls, cache_dir: str | Path | None = None) -> PageCache:
        """The cache in `pages/` of the cache folder every command uses."""
        return cls(cache_root(cache_dir) / "pages")

    def _path(self, sha256: str) -> Path:
        return self.root / f"pypdf-{pypdf_version()}" / sha256[:2] / f"{sha256}.json"

    def get(self, sha256: str) -> list[str] | None:
        """The page texts of the file with this SHA-256, or None when missing or unusable (then the caller
        extracts again and `put` overwrites the entry)."""
        try:
            data = json.loads(self._path(sha256).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        pages = data.get("pages") if isinstance(data, dict) else None
        if not isinstance(pages, list) or not pages or not all(isinstance(p, str) for p in pages):
            return None
        self.hits += 1
        return pages

    def put(self, sha256: str, pages: list[str]) -> None:
        """Store the page texts; a cache folder that cannot be written costs speed, never the command."""
        self.pages_extracted += len(pages)
        path = self._path(sha256)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"pypdf": pypdf_version(), "pages": pages}, ensure_ascii=False))
        except OSError:
            return
        self.stored += 1
