"""Small file helpers: writes that never leave a half-written file behind, never write through a link, and where
the cache folder is.

A run or cache folder may hold a symbolic link planted where the harness writes (`.lock` -> `~/.bashrc`): every
file the project rewrites is opened with `open_regular`, which refuses a symbolic link, a hard link to another
file, or anything but a regular file, instead of truncating what it points to. Caches go one step further: their
subfolders are opened without following links (`open_folder`), so a subfolder replaced by a link to an outside
folder is refused, never written or read through. An atomic write removes its temporary file when it fails;
one a killed process left behind is removed by the next write of the same file, when a run directory is locked
(`remove_stale_temps`), or on a cache folder's first write by the next process.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import threading
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


def atomic_write_text(path: str | Path, text: str, *, below: str | Path | None = None) -> None:
    """`atomic_write_bytes` of `text` as UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"), below=below)


@contextmanager
def atomic_writer(path: str | Path, *, buffer_bytes: int = 1 << 20) -> Iterator[IO[str]]:
    """A UTF-8 text file that takes `path`'s place when the block ends: written as it comes (in `buffer_bytes`
    batches) to a new temporary file beside `path`, fsynced and renamed over it; removed if the block raises, so
    `path` is the old file or the whole new one, never a part (a link at `path` is replaced, never followed)."""
    path = Path(path)
    folder = open_folder(path.parent)
    try:
        _sweep_quietly(folder, path.name)
        with _replacing(folder, path.name, "w", encoding="utf-8", buffering=buffer_bytes) as fh:
            yield fh
    finally:
        os.close(folder)


def atomic_write_bytes(path: str | Path, data: bytes, *, below: str | Path | None = None) -> None:
    """Write to a new temporary file beside `path` (`.<name>.<pid>.tmp`), fsync, then rename over it: a kill leaves
    the old file or the new one, and on any failure (a full disk, Ctrl-C) the temporary file is removed, never left
    empty; what an earlier, killed process left of its own write of `path` is removed first (`remove_stale_temps`;
    in a cache folder, of every entry, on this process's first write there). A link at `path` is replaced, never
    followed. With `below` (a cache folder), every folder from `below` down to `path`'s is opened without
    following links and made when missing (`open_folder`)."""
    path = Path(path)
    folder = open_folder(path.parent, below=below)
    try:
        if below is not None:
            _sweep_once(folder)
        else:
            _sweep_quietly(folder, path.name)
        _write_at(folder, path.name, data)
    finally:
        os.close(folder)


def read_bytes(path: str | Path, *, below: str | Path | None = None) -> bytes:
    """The bytes of the regular file at `path`, refusing (UnsafeFile) a link there; with `below`, the folders from
    `below` down are opened as `open_folder` does, so a folder replaced by a link is never read through."""
    with open_reading(path, below=below) as fh:
        return fh.read()


def open_reading(path: str | Path, *, below: str | Path | None = None) -> IO[bytes]:
    """The regular file at `path` opened to read in binary, refusing as `read_bytes` does: for a file too large to
    hold at once, read line by line."""
    path = Path(path)
    folder = open_folder(path.parent, below=below, make=False)
    try:
        fd = _open_at(folder, path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, path)
    finally:
        os.close(folder)
    fh = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
        fh.close()
        raise UnsafeFile(_message(path, "not a regular file"))
    return fh


def open_folder(folder: str | Path, *, below: str | Path | None = None, make: bool = True) -> int:
    """A descriptor of `folder`. With `below`, each folder from `below` (itself opened as given: the user chose
    it) down to `folder` is opened with O_NOFOLLOW relative to the one above (made first when `make`), so a
    cache subfolder replaced by a symbolic link is refused (UnsafeFile), never written or read through, with no
    race between the check and the use."""
    folder = Path(folder)
    if below is None:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    root = Path(below)
    if make:
        root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = root
    try:
        for part in folder.relative_to(root).parts:
            where = where / part
            if make:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            inner = _open_at(fd, part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, where)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_at(folder: int, name: str, flags: int, path: Path, mode: int = 0o644) -> int:
    try:
        return os.open(name, flags | os.O_CLOEXEC, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):  # a folder's link says ENOTDIR, not ELOOP
            try:
                link = stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
            except OSError:
                link = exc.errno == errno.ELOOP
            what = "a symbolic link" if link else "not a folder" if flags & os.O_DIRECTORY else "not a regular file"
            raise UnsafeFile(_message(path, what)) from None
        raise


def _write_at(folder: int, name: str, data: bytes) -> None:
    with _replacing(folder, name, "wb") as fh:
        fh.write(data)


@contextmanager
def _replacing(folder: int, name: str, mode: str, **kwargs: Any) -> Iterator[IO[Any]]:
    """A new temporary file `.<name>.<pid>.tmp` in `folder`, renamed over `name` when the block ends (after an
    fsync); on any failure it is removed, never left empty."""
    tmp = f".{name}.{os.getpid()}.tmp"
    try:
        os.unlink(tmp, dir_fd=folder)  # a leftover of a killed process with this pid, or a planted link
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=folder)
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise


_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")
_SWEPT: set[tuple[int, int]] = set()  # (device, inode) of the cache folders swept by this process
_SWEPT_GUARD = threading.Lock()


def remove_stale_temps(folder: str | Path, *, name: str | None = None) -> int:
    """Remove the temporary files that interrupted atomic writes left in `folder` (`.<name>.<pid>.tmp` of a
    process that no longer runs; only those of `name` when given); how many were removed. A link is removed, never
    followed."""
    fd = os.open(Path(folder), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _sweep(fd, name)
    finally:
        os.close(fd)


def _sweep(folder: int, name: str | None = None) -> int:
    removed = 0
    for entry in os.listdir(folder):
        match = _TEMP.match(entry)
        if match is None or (name is not None and match["name"] != name) or _alive(int(match["pid"])):
            continue
        try:
            os.unlink(entry, dir_fd=folder)
            removed += 1
        except OSError:  # gone already, or not ours to remove
            pass
    return removed


def _sweep_quietly(folder: int, name: str | None = None) -> None:
    try:
        _sweep(folder, name)
    except OSError:  # a folder that cannot be listed still takes the write
        pass


def _sweep_once(folder: int) -> None:
    """`_sweep` a cache folder the first time this process writes into it (a listing per folder, not per write)."""
    info = os.fstat(folder)
    with _SWEPT_GUARD:
        if (info.st_dev, info.st_ino) in _SWEPT:
            return
        _SWEPT.add((info.st_dev, info.st_ino))
    _sweep_quietly(folder)


def _alive(pid: int) -> bool:
    """Whether a process `pid` runs (this one too: its writes may be in flight on another thread)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process (or no such number of one)
        return False
    except PermissionError:  # another user's process: leave its files
        return True
    return True


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on `path` while the block runs; others wait their turn. The file is made for the
    lock and removed when it is released (`release_lock_file`), so nothing stays beside what it guards; a waiter
    whose file was removed meanwhile locks the new one instead."""
    while True:
        fh = open_regular(path, "a", encoding="utf-8")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except BaseException:
            fh.close()
            raise
        if still_linked(fh, path):
            break
        fh.close()  # the holder before us removed this file: lock the one now at `path`
    try:
        yield
    finally:
        release_lock_file(fh, path)


def still_linked(fh: IO[Any], path: Path) -> bool:
    """Whether `path` still names the file open as `fh`: a lock file its last holder removed does not, so a lock
    taken on it guards nothing."""
    try:
        at = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fh.fileno())
    return (at.st_dev, at.st_ino) == (mine.st_dev, mine.st_ino)


def release_lock_file(fh: IO[Any], path: Path) -> None:
    """Remove the lock file `path` (only if it is still the file open as `fh`), then close `fh`, which releases
    the lock. Removed while the lock is held: whoever waits on this file sees it gone and opens the next one."""
    try:
        if still_linked(fh, path):
            os.unlink(path)
    except OSError:  # a read-only folder: the lock is released all the same
        pass
    finally:
        fh.close()


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
