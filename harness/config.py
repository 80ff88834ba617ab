"""Settings files: one reader for every TOML config of the project (`rag-eval run`, `check`, `sweep`, `draft`).

Keys are the flags' names (dashes or underscores); each value must have the TOML type the settings dataclass
declares; paths are relative to the file. Every problem is reported at once, each naming the file and key.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping
from dataclasses import Field
from pathlib import Path
from typing import Any

from chatbot.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

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
