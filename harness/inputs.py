"""Users' files read into plain values: JSONL checked against a JSON Schema, CSV filled in by people, TOML settings.

CSV written for people goes through `csv_text`: a cell a spreadsheet would evaluate as a formula (`=`, `+`, `-`,
`@`, tab, CR first) gets a leading `'`, and `open_csv` strips it again, so an exported sheet imports unchanged.
What spreadsheets save is read with care (`decode_sheet`, `delimiter_problem`): UTF-8 with or without a BOM and
UTF-16 with its BOM are read; Windows-1252, a `;`- or tab-separated file, or a cell past the csv module's size
limit is one clear error naming the file and line.

One reader per kind, shared by every command. Each problem is named by file and line (or key) and collected in
a `FileProblems`, so a whole file is reported at once before any expensive work; a file that cannot be read at all
is an `InputError` at once. TOML keys are the flags' names (dashes or underscores); each value must have the
TOML type the settings dataclass declares; paths are relative to the file.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import Field, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdfrag import text as shared_text

from .errors import InputError

if TYPE_CHECKING:
    import jsonschema

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


# ---------------------------------------------------------------- problems, by file and line


@dataclass
class FileProblems:
    """Every problem found in one input file, reported together."""

    path: str
    items: list[str] = field(default_factory=list)

    def add(self, line: int, message: str) -> None:
        self.items.append(f"{self.path}:{line}: {message}")

    def raise_if_any(self, what: str, *, note: str | None = None) -> None:
        """One InputError listing every problem, and `note` (a likely common cause) on a last line."""
        if self.items:
            raise InputError(f"{len(self.items)} problem(s) in {what}; fix them and run again:\n  "
                             + "\n  ".join(self.items) + (f"\n{note}" if note else ""))


# ---------------------------------------------------------------- CSV files people edit in a spreadsheet
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
             what: str) -> tuple[csv.DictReader, FileProblems]:
    """A CSV file exported for people to fill in, opened for reading, and the FileProblems to collect its line
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
    problems = FileProblems(str(path))
    reader = _Reader(text, path)
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        problems.add(1, f"header: missing column(s) {', '.join(missing)}; expected {','.join(columns)}")
        problems.raise_if_any(what)
    return reader, problems


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # only a line with one can hold a lone surrogate


def surrogate_in_line(line: str) -> tuple[str, str] | None:
    """(field, problem) for the first string of a JSON line holding a lone UTF-16 surrogate (`pdfrag.text.
    lone_surrogate`): no row, manifest or report could hold it. None when there is none, or when the line does not
    parse (its reader says why). Only a line with a surrogate escape is parsed."""
    if not _SURROGATE_ESCAPE.search(line):
        return None
    try:
        found = shared_text.lone_surrogate(json.loads(line))
    except (ValueError, RecursionError):
        return None
    if found is None:
        return None
    path, _, bad = found
    return (path or "(line)", f"holds a lone surrogate U+{ord(bad):04X}, which is not text; write the text as UTF-8 "
                              "(a pair of surrogates, or the character itself)")


def json_lines(lines: list[str], problems: FileProblems) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; a line that is not JSON, or holds what is not text,
    becomes a problem."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if (surrogate := surrogate_in_line(line)) is not None:
            problems.add(number, ": ".join(surrogate))
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            problems.add(number, f"not valid JSON ({exc})")
        except RecursionError:
            problems.add(number, "nested too deeply to read as JSON (over about 1,000 levels)")


# ---------------------------------------------------------------- JSON lines


def schema_lines(path: Path, schema: dict, problems: FileProblems, *, what: str, record: str,
                 id_field: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every line of a JSONL file that meets `schema`; a line that does not is a
    problem naming the field at fault (or `record`), and an `id_field` seen on an earlier line is a problem too.
    Used for the cases and drafts files."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()  # a BOM (Windows editors) is not a problem
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
    import jsonschema  # here: compare and report read runs without it

    validator = jsonschema.Draft202012Validator(schema)
    seen: dict[str, int] = {}
    for number, data in json_lines(lines, problems):
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        for err in map(_deepest, errors):
            problems.add(number, f"{'/'.join(str(p) for p in err.absolute_path) or record}: {err.message}")
        if errors:
            continue
        key = data[id_field]
        if key in seen:
            problems.add(number, f"{id_field}: duplicate {id_field} {key!r} (first on line {seen[key]})")
        seen.setdefault(key, number)
        yield number, data


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For "not valid under any of the given schemas", the part that failed, so the message names the field
    (an evidence object with a bad source_id, rather than "not a string either")."""
    import jsonschema

    while error.context:
        error = jsonschema.exceptions.best_match([e for e in error.context if e.validator != "type"]
                                                 or error.context)
    return error


# ---------------------------------------------------------------- TOML settings

_TYPE_NAMES = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string",
               "ints": "a list of integers", "strs": "a list of strings"}


def read_toml(path: str | Path) -> dict[str, Any]:
    """The TOML table in `path`; a file that cannot be read or parsed is an InputError naming it."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the config file ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from exc


def check_values(data: Mapping[str, Any], path: Path, fields: Mapping[str, Field], *,
                 paths: Collection[str] = ()) -> dict[str, Any]:
    """`data` checked against the dataclass `fields`: by field name, with the `paths` settings resolved against
    the file's folder. A lone integer stands for a list of one where a list of integers is expected."""
    values, problems = {}, []
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in fields:
            problems.append(f"{path}: unknown setting {key!r}; known: {', '.join(sorted(fields))}")
            continue
        kind = _kind(fields[name])
        if kind == "ints" and isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not _has_type(kind, value):
            problems.append(f"{path}: setting {key!r} must be {_TYPE_NAMES[kind]}, got {value!r}")
            continue
        values[name] = value
    if problems:
        raise InputError("\n".join(problems))
    for name in paths:
        if isinstance(values.get(name), str) and not Path(values[name]).is_absolute():
            values[name] = str(path.parent / values[name])
    return values


def _kind(field: Field) -> str:
    """The TOML type a setting takes, from its dataclass annotation."""
    annotation = str(field.type)
    return next(k for k, marker in (("strs", "tuple[str"), ("ints", "tuple"), ("bool", "bool"), ("int", "int"),
                                    ("float", "float"), ("str", "str")) if marker in annotation)


def _has_type(kind: str, value: Any) -> bool:
    if kind == "strs":
        return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
    if kind == "ints":
        return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {"bool": bool, "str": str}[kind])
