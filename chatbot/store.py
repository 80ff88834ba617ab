"""Small file helpers: writes that never leave a half-written file behind, never write through a link, and where
the cache folder is.

A run or cache folder may hold a symbolic link planted where the harness writes (`.lock` -> `~/.bashrc`): every
file the project rewrites is opened with `open_regular`, which refuses a symbolic link, a hard link to another
file, or anything but a regular file, instead of truncating what it points to.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import InputError

_FLAGS = {"w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
          "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND, "r+b": os.O_RDWR}


class UnsafeFile(InputError):
    """A file the project would rewrite is a link or not a regular file."""


def open_regular(path: str | Path, mode: str, **kwargs: Any) -> IO[Any]:
    """`open(path, mode)` for mode w, a, a+ or r+b, refusing (UnsafeFile) a symbolic link at `path` (O_NOFOLLOW,
    so no race), a FIFO, device or folder, and a regular file with other hard links. Nothing is truncated or
    created through a link: the checks come before any write."""
    path = Path(path)
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        before = None
    if before is not None:
        _check(path, before)
    flags = _FLAGS[mode] | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    if before is not None:
        flags &= ~os.O_TRUNC  # truncate only after the descriptor is known to be this regular file
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            raise UnsafeFile(_message(path, "a symbolic link or a special file")) from None
        raise
    try:
        _check(path, os.fstat(fd))
        os.set_blocking(fd, True)
        if mode == "w":
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, mode, **kwargs)


def _check(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(_message(path, "a symbolic link"))
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(_message(path, "not a regular file"))
    if info.st_nlink > 1:
        raise UnsafeFile(_message(path, f"a hard link ({info.st_nlink} names for one file)"))


def _message(path: Path, what: str) -> str:
    return (f"{path} is {what}; the harness writes only regular files of its own there and will not write "
            "through it. Remove it (`rm` removes the link, not its target) and run again")


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a new temporary file beside `path`, fsync, then rename over it (a link at `path` is replaced,
    never followed)."""
    with atomic_writer(path) as fh:
        fh.write(text)


@contextmanager
def atomic_writer(path: str | Path, *, buffer_bytes: int = 1 << 20) -> Iterator[IO[str]]:
    """A UTF-8 text file that takes `path`'s place when the block ends: written as it comes (in `buffer_bytes`
    batches) to a new temporary file beside `path`, fsynced and renamed over it; removed if the block raises, so
    `path` is the old file or the whole new one, never a part (a link at `path` is replaced, never followed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        os.unlink(tmp)  # a leftover of a killed process with this pid, or a planted link: never write through it
    except FileNotFoundError:
        pass
    fh = open_regular(tmp, "w", encoding="utf-8", buffering=buffer_bytes)
    try:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())
    except BaseException:
        fh.close()
        tmp.unlink(missing_ok=True)
        raise
    fh.close()
    os.replace(tmp, path)

@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on `path` (created if missing) while the block runs; others wait their turn."""
    with open_regular(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


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
