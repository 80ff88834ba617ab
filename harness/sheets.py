"""CSV files that people edit in a spreadsheet: written formula-safe, read back with the guard removed.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to LibreOffice and Excel:
text from a system or a PDF ("=HYPERLINK(...)") would run, and saving the sheet would replace the text with the
formula's result. Every CSV the harness writes for people goes through `csv_text`, which prefixes such cells
with `'` (shown as text, never evaluated); `open_csv` strips that prefix again, so an exported sheet imports
unchanged. A cell that already starts with apostrophes before such a character gets one more, so the round trip
is exact for every text.

What spreadsheets save is read with care (`decode_sheet`, `delimiter_problem`): UTF-8 with or without a BOM and
UTF-16 with its BOM ("Unicode text") are read; Windows-1252 (Excel's "CSV (Comma delimited)"), a `;`- or
tab-separated file, or a cell past the csv module's size limit is one clear error naming the file and line.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from chatbot.errors import InputError

from .cases import Problems

__all__ = ["NotText", "csv_text", "decode_sheet", "delimiter_problem", "guard", "open_csv", "unguard"]

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


_SAVE_AS = "save it as 'CSV UTF-8 (Comma delimited)' and try again"


class NotText(ValueError):
    """A file that is not text we read: `line` is where the trouble starts, `message` says what to do."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


def decode_sheet(raw: bytes) -> str:
    """The text of a file a spreadsheet may have saved: UTF-16 with a byte-order mark, else UTF-8 (a BOM is
    dropped). Anything else raises NotText, saying what the bytes look like and how to save them instead."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise NotText(raw[:exc.start].count(b"\n\x00") + 1, f"broken UTF-16 text; {_SAVE_AS}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        looks = ("UTF-16 without a byte-order mark" if b"\x00" in raw[:4096]
                 else "Windows-1252 or Latin-1, as Excel saves 'CSV (Comma delimited)'")
        raise NotText(raw[:exc.start].count(b"\n") + 1, f"not UTF-8 text (it looks like {looks}); {_SAVE_AS}") \
            from None


def delimiter_problem(header: str) -> str | None:
    """Why a header line is not comma-separated (`;` or tabs, as some spreadsheet locales save), else None."""
    if "," in header:
        return None
    for sep, name in ((";", "`;`"), ("\t", "tab")):
        if sep in header:
            return f"looks like {name} separated: save as comma-separated ('CSV UTF-8 (Comma delimited)')"
    return None


class _Reader(csv.DictReader):
    """A DictReader whose cells come back unguarded (`line_num` still counts the file's lines); a line the csv
    module cannot read (a cell past its size limit, a stray NUL) is one InputError naming the file and line."""

    def __init__(self, text: str, path: Path):
        super().__init__(io.StringIO(text, newline=""))
        self.path = path

    def __next__(self) -> dict:
        start = self.line_num + 1  # where the record being read begins
        try:
            record = super().__next__()
        except csv.Error as exc:
            raise InputError(f"{self.path}:{start}: unreadable CSV ({exc}); is this the exported file?") from None
        return {key: unguard(value) if isinstance(value, str) else value for key, value in record.items()}


def open_csv(path: str | Path, required: Sequence[str], columns: Sequence[str],
             what: str) -> tuple[csv.DictReader, Problems]:
    """A CSV file exported for people to fill in, opened for reading, and the Problems to collect its line
    problems in. A missing or undecodable file, a file not separated by commas, or a header without a required
    column is reported at once, naming `what`."""
    path = Path(path)
    try:
        text = decode_sheet(path.read_bytes())
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    except NotText as exc:
        raise InputError(f"{path}:{exc.line}: {exc.message}") from None
    if (problem := delimiter_problem(text.partition("\n")[0])) is not None:
        raise InputError(f"{path}:1: {problem}")
    problems = Problems(str(path))
    reader = _Reader(text, path)
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        problems.add(1, f"header: missing column(s) {', '.join(missing)}; expected {','.join(columns)}")
        problems.raise_if_any(what)
    return reader, problems
