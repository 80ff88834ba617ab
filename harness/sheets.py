"""CSV files that people edit in a spreadsheet: written formula-safe, read back with the guard removed.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to LibreOffice and Excel:
text from a system or a PDF ("=HYPERLINK(...)") would run, and saving the sheet would replace the text with the
formula's result. Every CSV the harness writes for people goes through `csv_text`, which prefixes such cells
with `'` (shown as text, never evaluated); `open_csv` strips that prefix again, so an exported sheet imports
unchanged. A cell that already starts with apostrophes before such a character gets one more, so the round trip
is exact for every text.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from chatbot.errors import InputError

from .cases import Problems

__all__ = ["csv_text", "guard", "open_csv", "unguard"]

_FORMULA = re.compile(r"^'*[=+\-@\t\r]")


def guard(cell: str) -> str:
    """`cell` as a spreadsheet shows it as text: `'` before a cell that a spreadsheet would evaluate."""
    return "'" + cell if _FORMULA.match(cell) else cell


def unguard(cell: str) -> str:
    """The text `guard` was given: one leading `'` removed from a guarded cell, any other cell unchanged."""
    return cell[1:] if cell.startswith("'") and _FORMULA.match(cell[1:]) else cell


def csv_text(header: Sequence[str], lines: Iterable[Sequence[str]]) -> str:
    """CSV text with `header` and `lines`, every cell guarded."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([guard(cell) for cell in line] for line in lines)
    return out.getvalue()


class _Reader(csv.DictReader):
    """A DictReader whose cells come back unguarded (`line_num` still counts the file's lines)."""

    def __next__(self) -> dict:
        record = super().__next__()
        return {key: unguard(value) if isinstance(value, str) else value for key, value in record.items()}


def open_csv(path: str | Path, required: Sequence[str], columns: Sequence[str],
             what: str) -> tuple[csv.DictReader, Problems]:
    """A CSV file exported for people to fill in, opened for reading, and the Problems to collect its line
    problems in. A missing file or a header without a required column is reported at once, naming `what`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    problems = Problems(str(path))
    reader = _Reader(io.StringIO(text))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        problems.add(1, f"header: missing column(s) {', '.join(missing)}; expected {','.join(columns)}")
        problems.raise_if_any(what)
    return reader, problems
