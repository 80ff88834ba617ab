"""Run directories: rows.jsonl (appended, flushed per case), manifest.json and summary.json (written atomically),
and the OS lock on a run directory.

The lock keeps two processes from writing one run at once (two `--resume` of one run would interleave duplicate
rows). It is held on `<run>/.lock` while the process writes; the kernel releases it when the process ends,
however it ends, so a kill never leaves a stale lock. Released normally, the `.lock` file is removed too."""

from __future__ import annotations

import datetime as _dt
import fcntl
import hashlib
import itertools
import json
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Mapping, Sequence

from pydantic import ValidationError

from pdfrag.safe_files import (
    atomic_write_text,
    open_reading,
    open_regular,
    read_bytes,
    release_lock_file,
    remove_stale_temps,
    still_linked,
)

from .errors import InputError, RunLocked
from .records import (
    MANIFEST_FORMAT,
    Manifest,
    Row,
    RowScores,
    Summary,
    field_problem,
    format_problem,
    in_bulk,
    metric_problem,
)

ROWS, MANIFEST, SUMMARY = "rows.jsonl", "manifest.json", "summary.json"


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_run_dir(out: str | Path, label: str | None) -> Path:
    """results/<UTC time>-<label>, made unique with a counter if two runs start in the same second."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", label or "run").strip("-") or "run"
    base = Path(out) / f"{stamp}-{slug}"
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        path = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            path.mkdir()  # atomic: of two runs starting in the same second, each gets its own folder
            return path
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


class RowWriter:
    """Appends rows, one line each. Every row is flushed (a killed process leaves whole lines; resume drops a cut
    last line) and the file is fsynced at most every `SYNC_EVERY` seconds and on close, so a power loss costs at
    most that much answering, which resume reruns. A row is written by its own serializer and not parsed back: its
    records were validated as they were made (`Row.line` refuses NaN)."""

    SYNC_EVERY = 1.0

    def __init__(self, run_dir: Path, *, append: bool = False):
        self.path = run_dir / ROWS
        self._fh = open_regular(self.path, "a" if append else "w", encoding="utf-8")
        self._synced = time.monotonic()

    def write(self, row: Row) -> None:
        self._fh.write(row.line() + "\n")
        self._fh.flush()
        if time.monotonic() - self._synced >= self.SYNC_EVERY:
            self._sync()

    def _sync(self) -> None:
        os.fsync(self._fh.fileno())
        self._synced = time.monotonic()

    def close(self) -> None:
        try:
            self._sync()
        finally:
            self._fh.close()


def write_json(path: Path, data: dict) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror}); is this a run directory?") from exc
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from exc


def read_manifest(run_dir: str | Path) -> Manifest:
    """A run's manifest.json (errors name the file and field); see `read_manifest_noting`."""
    return read_manifest_noting(run_dir)[0]


def read_manifest_noting(run_dir: str | Path) -> tuple[Manifest, tuple[str, ...]]:
    """The manifest and what its reader should be told of it: a manifest without a format version (format 1,
    before versions) reads with today's sections, and a key this code does not know is left out and named. Of a
    manifest of today's format, an unknown key is refused; a newer format than this code knows is refused."""
    path = Path(run_dir) / MANIFEST
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a run manifest (expected a JSON object)")
    if (problem := format_problem(data, MANIFEST_FORMAT)) is not None:
        raise InputError(f"{path}: {problem}")
    version = data.get("format", 1)
    notes = []
    if version == 1:
        known = {f.alias or name for name, f in Manifest.model_fields.items()}
        unknown = sorted(set(data) - known)
        data = {k: v for k, v in data.items() if k in known}
        notes.append(f"{path}: manifest format 1 (written before format versions), read as format "
                     f"{MANIFEST_FORMAT}" + (f"; left out keys it does not know: {', '.join(unknown)}" if unknown
                                             else ""))
    try:
        return Manifest.model_validate(data), tuple(notes)
    except ValidationError as exc:
        raise InputError(f"{path}: not a run manifest ({field_problem(exc)})") from exc


def read_summary(run_dir: str | Path) -> Summary | None:
    """A run's summary.json, or None when the run has none yet (it stopped before its last row)."""
    path = Path(run_dir) / SUMMARY
    if not path.exists():
        return None
    try:
        return Summary.model_validate(read_json(path))
    except ValidationError as exc:
        raise InputError(f"{path}: not a run summary ({field_problem(exc)}); rag-eval review RUN --apply writes "
                         "it again from the rows") from exc


@in_bulk
def read_rows(run_dir: str | Path) -> list[Row]:
    """Rows of a run. A last line cut by a crash is ignored; any other bad line is an error naming it."""
    path = Path(run_dir) / ROWS
    try:
        lines = read_bytes(path).decode("utf-8").split("\n")  # a link there: "… is a symbolic link", not read
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror}); is {run_dir} a run directory?") from exc
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = Row.model_validate_json(line)
        except ValidationError as exc:
            if number == len(lines) and exc.errors()[0]["type"] == "json_invalid":  # a write cut short
                break
            raise InputError(f"{path}:{number}: not a result row ({field_problem(exc)})") from exc
        check_range(row.metrics, path, number)
        rows.append(row)
    return rows


def check_range(metrics: Mapping[str, float | None], path: Path, number: int) -> None:
    """Refuse line `number` of `path` when a metric is out of its range (`metric_problem`), naming the file, the
    line and the metric."""
    problem = metric_problem(metrics)
    if problem is not None:
        raise InputError(f"{path}:{number}: not a result row ({problem}); the row was edited or written by another "
                         "tool: fix or remove that line")


def read_scores(run_dir: str | Path) -> Iterator[tuple[RowScores, Row | None]]:
    """The rows of a run one at a time, as `RowScores` (what compare reads), with the whole `Row` beside it when a
    judge rated the answer (else None); nothing but the current line is held. The lines are checked as `read_rows`
    checks them: a last line cut by a crash is ignored, any other bad line is an error naming it."""
    path = Path(run_dir) / ROWS
    try:
        fh = open_reading(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror}); is {run_dir} a run directory?") from exc
    with fh:
        line = fh.readline()
        number = 1
        while line:
            following = fh.readline()
            if line.strip():
                try:
                    scores = RowScores.model_validate_json(line)
                    check_range(scores.metrics, path, number)
                    yield scores, (Row.model_validate_json(line) if scores.judged_claims is not None else None)
                except ValidationError as exc:
                    if not following and exc.errors()[0]["type"] == "json_invalid" and not line.endswith(b"\n"):
                        return  # a write cut short
                    raise InputError(f"{path}:{number}: not a result row ({field_problem(exc)})") from exc
            line, number = following, number + 1


def write_rows(run_dir: Path, rows: Sequence[Row]) -> None:
    """Replace a run's rows at once (review, score), each written as RowWriter writes it."""
    lines = [r.line() for r in rows]
    atomic_write_text(Path(run_dir) / ROWS, "".join(line + "\n" for line in lines))


@dataclass(frozen=True)
class LoadedRun:
    """A run directory read into memory: its name, path, rows and manifest, and what its reader should be told
    of the manifest (`read_manifest_noting`)."""

    name: str
    path: Path
    rows: tuple[Row, ...]
    manifest: Manifest
    notes: tuple[str, ...] = ()


def load_run(path: str | Path) -> LoadedRun:
    """Read rows.jsonl and manifest.json of a run directory (errors name the file)."""
    path = Path(path)
    manifest, notes = read_manifest_noting(path)
    return LoadedRun(path.name, path, tuple(read_rows(path)), manifest, notes)


def find_run(spec: str | Path, out: str | Path) -> tuple[Path, str | None]:
    """A run directory given as a path or as a label: a label resolves to the latest run in `out` whose manifest
    has that label (latest by start time, then directory name). Returns the directory and, for a label, a line
    saying which directory was picked (None for a path). Neither a directory nor a label there: InputError."""
    path = Path(spec)
    if path.is_dir():
        return path, None
    runs = _labelled_runs(Path(out))
    found = sorted(item for item in runs if item[0] == str(spec))
    if not found:
        labels = sorted({item[0] for item in runs})
        raise InputError(f"{spec}: not a run directory, and no run in {out} has that label (labels there: "
                         f"{', '.join(labels[:20]) or 'none'}); give a run directory or a label, with --out "
                         "for another results folder")
    picked = found[-1][3]
    note = f"label {str(spec)!r}: {picked} (the latest of {len(found)} run(s) with that label in {out})"
    latest = {item[4]: item[3] for item in found}  # per system, its latest run with the label
    if len(latest) > 1:
        each = "; ".join(f"{system}: {path}" for system, path in sorted(latest.items(), key=lambda kv: kv[1].name))
        note += (f"\nwarning: label {str(spec)!r} names runs of {len(latest)} different systems ({each}); the latest "
                 "was taken; give a run directory to choose, or a label of its own to each system's runs")
    return picked, note


def _labelled_runs(out: Path) -> list[tuple[str, str, str, Path, str]]:
    """(label, start time, directory name, directory, system) of every run directly in `out` whose manifest names
    a label; the system as the run named it (`--system`) and described itself."""
    found = []
    for candidate in sorted(out.iterdir()) if out.is_dir() else ():
        try:
            manifest = read_json(candidate / MANIFEST) if (candidate / MANIFEST).is_file() else None
        except InputError:
            continue  # an unreadable manifest is not a run to pick
        if not isinstance(manifest, dict):
            continue
        label = (manifest.get("settings") or {}).get("label")
        if isinstance(label, str):
            found.append((label, str(manifest.get("started_at") or ""), candidate.name, candidate,
                          _system_of(manifest)))
    return found


def _system_of(manifest: dict) -> str:
    """The system a run's manifest names, for a reader: `--system` and the name its describe() gave."""
    spec = (manifest.get("settings") or {}).get("system")
    described = manifest.get("system")
    name = described.get("name") if isinstance(described, dict) else None
    spec_text = spec if isinstance(spec, str) else "saved outputs"
    return f"{spec_text} ({name})" if isinstance(name, str) and name != spec_text else spec_text


LOCK = ".lock"


class RunLock:
    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK
        self._fh: IO[str] | None = None

    def acquire(self, started_at: str, *, wait_s: float = 0.0) -> RunLock:
        """Take the lock, waiting up to `wait_s` seconds for its holder; RunLocked names the holder."""
        fh = open_regular(self.path, "a+", encoding="utf-8")
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                if still_linked(fh, self.path):
                    break
                fh.close()  # its holder removed this file on release: try the one now at the path
                fh = open_regular(self.path, "a+", encoding="utf-8")
                continue
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                fh.seek(0)
                holder = fh.read().strip() or "another process"
                fh.close()
                waited = f" (waited {wait_s:g} s)" if wait_s else ""
                raise RunLocked(f"{self.path.parent} is being written by {_describe(holder)}{waited}; wait for it "
                                "to finish (or stop it) and run again") from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": started_at}) + "\n")
        fh.flush()
        self._fh = fh
        try:  # nobody else writes here now: what a killed writer left of an atomic write goes
            remove_stale_temps(self.path.parent)
        except OSError:
            pass
        return self

    def __enter__(self) -> RunLock:
        return self.acquire(utc_now())

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        if self._fh is not None:
            release_lock_file(self._fh, self.path)  # removes .lock, then closing the descriptor releases the lock
            self._fh = None


def _describe(holder: str) -> str:
    try:
        data = json.loads(holder)
        return f"process {data['pid']} on {data['host']} (since {data['since']})"
    except (ValueError, KeyError, TypeError):
        return holder
