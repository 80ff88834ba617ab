"""A run as the report reads it: every row as a `ReportRow` (one pass over rows.jsonl), and the whole `Row` only
of the cases the case tables show, read again from their lines (`whole_rows`).

A run already in memory (`LoadedRun`) is read the same way, its rows standing for both.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

from pydantic import ValidationError

from pdfrag.safe_files import open_reading

from ..errors import InputError
from ..records import AnyRow, Manifest, ReportRow, Row, field_problem, in_bulk
from ..runs import ROWS, LoadedRun, check_range, read_manifest_noting

__all__ = ["ReportRun", "read_report_run", "report_run_of"]

Key = tuple[str, int]
M = TypeVar("M", Row, ReportRow)


@dataclass(frozen=True)
class ReportRun:
    """A run's name, path, manifest, notes and rows (`ReportRow`, or whole rows of a `LoadedRun`); `offsets[i]` is
    where row i's line starts in rows.jsonl (empty when the rows are whole)."""

    name: str
    path: Path
    rows: tuple[AnyRow, ...]
    manifest: Manifest
    notes: tuple[str, ...] = ()
    offsets: array = field(default_factory=lambda: array("q"), repr=False)
    numbers: array = field(default_factory=lambda: array("q"), repr=False)  # row i's line number

    def whole_rows(self, keys: Collection[Key]) -> dict[Key, Row]:
        """The whole rows of these cases (those the run has), read again from their lines."""
        wanted = [(i, r.key) for i, r in enumerate(self.rows) if r.key in keys]
        if not self.offsets:
            return {key: whole for i, key in wanted if isinstance(whole := self.rows[i], Row)}
        out = {}
        path = self.path / ROWS
        with _opened(path, self.path) as fh:
            for i, key in wanted:
                fh.seek(self.offsets[i])
                row = _parsed(Row, fh.readline(), path, self.numbers[i], last=False)
                if row is not None:
                    out[key] = row
        return out


def report_run_of(run: LoadedRun) -> ReportRun:
    return ReportRun(run.name, run.path, run.rows, run.manifest, run.notes)


@in_bulk
def read_report_run(path: str | Path) -> ReportRun:
    """The run directory at `path` as the report reads it. A last line cut by a crash is ignored, as `read_rows`
    ignores it; any other bad line is an error naming the file, line and field."""
    path = Path(path)
    manifest, notes = read_manifest_noting(path)
    rows: list[ReportRow] = []
    offsets, numbers = array("q"), array("q")
    lines = path / ROWS
    known: dict = {}  # the repeated values the rows share (`ReportRow`)
    with _opened(lines, path) as fh:
        offset, line = 0, fh.readline()
        number = 1
        while line:
            following = fh.readline()
            if line.strip():
                row = _parsed(ReportRow, line, lines, number, last=not following, known=known)
                if row is None:
                    break
                rows.append(row)
                offsets.append(offset)
                numbers.append(number)
            offset += len(line)
            line, number = following, number + 1
    return ReportRun(path.name, path, tuple(rows), manifest, notes, offsets, numbers)


def _opened(path: Path, run_dir: Path) -> IO[bytes]:
    try:
        return open_reading(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror}); is {run_dir} a run directory?") from exc


def _parsed(kind: type[M], line: bytes, path: Path, number: int, *, last: bool, known: dict | None = None
            ) -> M | None:
    try:
        row = kind.model_validate_json(line, context=None if known is None else {"known": known})
    except ValidationError as exc:
        if last and exc.errors()[0]["type"] == "json_invalid" and not line.endswith(b"\n"):
            return None  # a write cut short
        raise InputError(f"{path}:{number}: not a result row ({field_problem(exc)})") from exc
    check_range(row.metrics, path, number)
    return row
