"""The reviewer's name, remembered between sessions: the CLI asks a person once and keeps the answer in the cache
folder (`reviewer.txt`), so their verdicts and decisions carry the name they gave and never, silently, the login
account's (`root` on a container). `--reviewer` names someone else for one command."""

from __future__ import annotations

from pathlib import Path

from pdfrag.safe_files import atomic_write_text, cache_root, read_bytes
from pdfrag.terminal import printable

from ..errors import InputError, RagError
from .book import JUDGE_PREFIX, ReviewBook

__all__ = ["MAX_NAME_CHARS", "REVIEWER_FILE", "checked_name", "refuse_nameless", "remember_reviewer",
           "remembered_reviewer", "reviewer_file"]

REVIEWER_FILE = "reviewer.txt"
MAX_NAME_CHARS = 100
_MAX_FILE_BYTES = 4 * MAX_NAME_CHARS + 2  # UTF-8 of the longest name and its newline


def reviewer_file(cache_dir: str | Path | None = None) -> Path:
    """Where the name is remembered: `reviewer.txt` in the cache folder (`pdfrag.safe_files.cache_root`)."""
    return cache_root(cache_dir) / REVIEWER_FILE


def checked_name(name: str, *, where: str = "--reviewer") -> str:
    """`name` without surrounding space, if a person may review under it: not empty, at most MAX_NAME_CHARS, no
    control characters, and not a judge's (`judge:...` names a model's verdicts). Else InputError naming `where`."""
    text = name.strip()
    if not text:
        raise InputError(f"{where}: the reviewer name is empty; give the name your verdicts should carry")
    if len(text) > MAX_NAME_CHARS:
        raise InputError(f"{where}: a reviewer name of {len(text)} characters; keep it to {MAX_NAME_CHARS}")
    if printable(text) != text:
        raise InputError(f"{where}: the reviewer name {printable(text)!r} holds control characters; type it again")
    if text.startswith(JUDGE_PREFIX):
        raise InputError(f"{where}: {text!r}: names starting with {JUDGE_PREFIX!r} are a model judge's; choose "
                         "your own")
    return text


def remembered_reviewer(cache_dir: str | Path | None = None) -> str | None:
    """The name remembered in `reviewer_file()`, or None when there is none or it is not a name any more (an
    edited or broken file is asked for again, never trusted)."""
    path = reviewer_file(cache_dir)
    try:
        if path.lstat().st_size > _MAX_FILE_BYTES:
            return None
        return checked_name(read_bytes(path).decode("utf-8"), where=str(path))
    except (OSError, UnicodeDecodeError, RagError):  # absent, unreadable, a link, not a name: nothing remembered
        return None


def remember_reviewer(name: str, cache_dir: str | Path | None = None) -> Path:
    """Keep `name` (checked) for the next review; returns the file it went to."""
    path = reviewer_file(cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, checked_name(name) + "\n")
    return path


def refuse_nameless(path: str | Path, imported: ReviewBook) -> None:
    """InputError when an imported review or resolution names nobody (a blank reviewer column, and no name given
    or remembered): it would count as one unnamed reviewer's, whoever gave it. Raised before anything is stored."""
    nameless = sorted({r.case_id for r in imported.reviews.values() if not r.reviewer}
                      | {r.case_id for r in imported.resolutions.values() if not r.resolver})
    if nameless:
        raise InputError(f"{path}: a blank reviewer column on the reviews of {len(nameless)} case(s) "
                         f"({', '.join(nameless[:5])}); fill the column or give --reviewer NAME; nothing was imported")
