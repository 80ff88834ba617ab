"""Users' files read into plain values: JSONL checked against a JSON Schema, CSV filled in by people, TOML settings.

One reader per kind, shared by every command. Each problem is named by file and line (or key) and collected in
a `Problems`, so a whole file is reported at once before any expensive work; a file that cannot be read at all
is an `InputError` at once. TOML keys are the flags' names (dashes or underscores); each value must have the
TOML type the settings dataclass declares; paths are relative to the file.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import Field, dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from .errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


# ---------------------------------------------------------------- problems, by file and line


@dataclass
class Problems:
    """Every problem found in one input file, reported together."""

    path: str
    items: list[str] = field(default_factory=list)

    def add(self, line: int, message: str) -> None:
        self.items.append(f"{self.path}:{line}: {message}")

    def raise_if_any(self, what: str) -> None:
        if self.items:
            raise InputError(f"{len(self.items)} problem(s) in {what}; fix them and run again:\n  "
                             + "\n  ".join(self.items))


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
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        problems.add(1, f"header: missing column(s) {', '.join(missing)}; expected {','.join(columns)}")
        problems.raise_if_any(what)
    return reader, problems


def json_lines(lines: list[str], problems: Problems) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; a line that is not JSON becomes a problem."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            problems.add(number, f"not valid JSON ({exc})")


# ---------------------------------------------------------------- JSON lines


def schema_lines(path: Path, schema: dict, problems: Problems, *, what: str, record: str,
                 id_field: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every line of a JSONL file that meets `schema`; a line that does not is a
    problem naming the field at fault (or `record`), and an `id_field` seen on an earlier line is a problem too.
    Used for the cases and drafts files."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
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
