"""Extracted page text, cached by the PDF's SHA-256 and the pypdf version that extracted it.

Reading 200 pages with pypdf takes seconds; every command (check, run, draft, draft cases, review) reads the
same unchanged PDFs again. An entry is `pages/pypdf-<version>/<sha[:2]>/<sha>.json` under the cache folder
(`--cache-dir`), holding the text of every page: the same bytes under the same pypdf give the same text, so
a hit needs no pypdf at all, and another pypdf (whose text may differ) never sees this one's entries.

An entry is checked before it is trusted: it names the file's SHA-256 and carries the SHA-256 of its own pages
(`pages_sha256`, of their JSON text), so an entry edited by hand, damaged, or copied under another file's name is
discarded, the pages extracted again and the entry rewritten, with one warning (`problem`) for the caller to
show. An entry written before these checks is re-extracted silently. Its folders are opened without following
links (`pdfrag.safe_files.open_folder`): a subfolder replaced by a link is never read or written through.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .safe_files import UnsafeFile, atomic_write_text, cache_root, read_bytes
from .versions import pypdf_version


class PageCache:
    """Page texts by file SHA-256 under one pypdf version. `hits`, `stored` and `pages_extracted` count this
    object's use (pages extracted = pages that pypdf read because the cache lacked their file); `discarded`
    lists the entries that failed their check, `problem` says so in one warning."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.hits = self.stored = self.pages_extracted = 0
        self.discarded: list[str] = []
        self._unsafe: str | None = None

    @classmethod
    def at(cls, cache_dir: str | Path | None = None) -> PageCache:
        """The cache in `pages/` of the cache folder every command uses."""
        return cls(cache_root(cache_dir) / "pages")

    @property
    def problem(self) -> str | None:
        """One warning for everything this cache found wrong so far, or None."""
        if self._unsafe is not None:
            return self._unsafe
        if not self.discarded:
            return None
        more = f" (and {len(self.discarded) - 1} more)" if len(self.discarded) > 1 else ""
        return (f"the page-text cache entry {self.discarded[0]}{more} did not match its own digest (edited or "
                "damaged); it was discarded and the pages extracted again")

    def _path(self, sha256: str) -> Path:
        return self.root / f"pypdf-{pypdf_version()}" / sha256[:2] / f"{sha256}.json"

    def get(self, sha256: str) -> list[str] | None:
        """The page texts of the file with this SHA-256, or None when missing, from before the checks, or failing
        them (then the caller extracts again and `put` overwrites the entry)."""
        path = self._path(sha256)
        try:
            raw = read_bytes(path, below=self.root)
        except FileNotFoundError:
            return None
        except UnsafeFile as exc:
            self._unsafe = f"the page-text cache is not used: {exc}"
            return None
        except OSError:
            return None
        pages = _checked(raw, sha256)
        if pages is None:
            self.discarded.append(str(path))
        elif pages:
            self.hits += 1
        return pages or None

    def put(self, sha256: str, pages: list[str]) -> None:
        """Store the page texts; a cache folder that cannot be written costs speed, never the command (a link
        in its place is said in `problem`)."""
        self.pages_extracted += len(pages)
        entry = {"pypdf": pypdf_version(), "sha256": sha256, "pages": pages, "pages_sha256": _digest(pages)}
        try:
            atomic_write_text(self._path(sha256), json.dumps(entry, ensure_ascii=False), below=self.root)
        except UnsafeFile as exc:
            self._unsafe = f"the page-text cache is not used: {exc}"
            return
        except OSError:
            return
        self.stored += 1


def _digest(pages: list[str]) -> str:
    return hashlib.sha256(json.dumps(pages, ensure_ascii=False).encode("utf-8")).hexdigest()


def _checked(raw: bytes, sha256: str) -> list[str] | None:
    """The entry's pages when it checks out; [] for an entry written before the checks (a silent miss); None
    for one that fails them."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if "pages_sha256" not in data:
        return []
    pages = data.get("pages")
    if (not isinstance(pages, list) or not pages or not all(isinstance(p, str) for p in pages)
            or data.get("sha256") != sha256 or data["pages_sha256"] != _digest(pages)):
        return None
    return pages
