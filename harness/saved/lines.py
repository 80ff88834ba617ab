"""Reading one saved-output file a line at a time: CSV rows or JSONL objects made records
(`harness.records.saved_lines`), and every problem as `file:line: field: problem` (the layouts themselves:
`harness.saved.layout`).

A file is a stream: UTF-8 (a BOM dropped) or UTF-16 with its byte-order mark, lines split as universal newlines
(`\\n`, `\\r\\n`, `\\r`), its SHA-256 taken on the way. Nothing holds the whole file, except when it turns out not to be
text: it is then read whole once more to say where and why (`harness.inputs.decode_sheet`), and what was read from
it before counts for nothing (the file has no records, one problem).
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import InputError
from ..inputs import NotText, decode_sheet, delimiter_problem, surrogate_in_line
from ..records import InputFile, SavedCase, SavedChunk, SavedClaim, SavedLine, field_problem

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

MAX_SHOWN = 100
_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


class SavedProblems:
    """The problems of one loading: of each file those on its first lines (the message shows `MAX_SHOWN`) are
    kept and the rest only counted, so a million bad lines cost no memory."""

    def __init__(self) -> None:
        self._kept: dict[str, list[Problem]] = {}
        self._counts: dict[str, int] = {}

    def add(self, path: str, line: int, field: str, message: str) -> None:
        self._counts[path] = self._counts.get(path, 0) + 1
        kept = self._kept.setdefault(path, [])
        kept.append(Problem(path, line, field, message))
        if len(kept) >= 2 * MAX_SHOWN:  # keep the first lines (stable: a line's problems keep the order found)
            kept.sort(key=lambda p: p.line)
            del kept[MAX_SHOWN:]

    def count(self, path: str) -> int:
        return self._counts.get(path, 0)

    def forget(self, path: str) -> None:
        """Drop every problem of `path` (its lines count for nothing: it is not text)."""
        self._kept.pop(path, None)
        self._counts.pop(path, None)

    def __bool__(self) -> bool:
        return bool(self._counts)

    def raise_if_any(self) -> None:
        """One InputError listing the first problems by file and line, and how many more there are."""
        total = sum(self._counts.values())
        if not total:
            return
        ordered = sorted((p for kept in self._kept.values() for p in kept), key=lambda p: (p.path, p.line))
        shown = [f"  {p}" for p in ordered[:MAX_SHOWN]]  # stable: a line's problems keep the order found
        shown += [f"  ... and {total - MAX_SHOWN} more"] if total > MAX_SHOWN else []
        raise InputError(f"{total} problem{'s' * (total > 1)} in the saved outputs:\n" + "\n".join(shown))


class _Row:
    """One CSV row's cells, with typed getters that record problems instead of raising."""

    def __init__(self, path: str, line: int, cells: dict[str, str], problems: SavedProblems) -> None:
        self.path, self.line, self.cells, self._problems = path, line, cells, problems

    def problem(self, field: str, message: str) -> None:
        self._problems.add(self.path, self.line, field, message)

    def text(self, field: str, *, required: bool = False) -> str:
        value = self.cells.get(field) or ""
        if required and not value.strip():
            self.problem(field, "empty")
        return value.strip() if field.endswith("_id") else value

    def flag(self, field: str) -> bool:
        value = (self.cells.get(field) or "").strip().lower()
        if value not in _BOOLEANS:
            self.problem(field, f"{self.cells.get(field) or ''!r} is not a boolean (use true/false/yes/no/1/0)")
        return _BOOLEANS.get(value, False)

    def items(self, field: str, sep: str = "|") -> tuple[str, ...]:
        value = self.cells.get(field) or ""
        items = tuple(v.strip() for v in value.split(sep)) if value.strip() else ()
        if "" in items:
            self.problem(field, f"empty item in {value!r}")
        return items

    def points(self, field: str) -> tuple[tuple[str, ...], ...]:
        points = tuple(tuple(a.strip() for a in item.split(";")) for item in self.items(field))
        for point in points:
            if "" in point:
                self.problem(field, f"empty alternative in {';'.join(point)!r}")
        return points


def _chunk_from_row(row: _Row) -> SavedChunk:
    return SavedChunk.model_construct(chunk_id=row.text("chunk_id", required=True),
                                      text=row.text("text", required=True), topic=row.text("topic"))


def _case_from_row(row: _Row) -> SavedCase:
    return SavedCase.model_construct(
        case_id=row.text("case_id", required=True),
        question=row.text("question", required=True),
        expected_chunk_ids=row.items("expected_chunk_ids"),
        required_points=row.points("required_points"),
        candidate_answer=row.text("candidate_answer"),
        cited_chunk_ids=row.items("cited_chunk_ids"),
        should_abstain=row.flag("should_abstain"),
        candidate_abstains=row.flag("candidate_abstains"),
        retrieved_chunk_ids=row.items("retrieved_chunk_ids") or None,  # an empty cell means "not saved"
    )


def _claim_from_row(row: _Row) -> SavedClaim:
    return SavedClaim.model_construct(case_id=row.text("case_id", required=True),
                                      claim=row.text("claim", required=True),
                                      support_chunk_ids=row.items("support_chunk_ids"))


@dataclass(frozen=True)
class _Kind:
    """How one role's lines are read: the required CSV columns, the CSV row reader (its cells checked one by one)
    and the record a JSONL line is validated as."""

    columns: tuple[str, ...]
    from_row: Callable[[_Row], SavedLine]
    record: type[SavedChunk] | type[SavedCase] | type[SavedClaim]


KINDS = {
    "chunks": _Kind(("chunk_id", "text"), _chunk_from_row, SavedChunk),
    "cases": _Kind(("case_id", "question", "expected_chunk_ids", "required_points", "candidate_answer",
                    "cited_chunk_ids", "should_abstain", "candidate_abstains"), _case_from_row, SavedCase),
    "claims": _Kind(("case_id", "claim", "support_chunk_ids"), _claim_from_row, SavedClaim),
}


@lru_cache(maxsize=None)
def _validator(record: type[SavedLine]) -> Draft202012Validator:
    """The record's JSON Schema (the one published), to say field by field what is wrong with a line it refused."""
    from jsonschema import Draft202012Validator  # only for a refused line

    return Draft202012Validator(record.model_json_schema())


def _schema_problem(path: str, line: int, error: Any) -> Problem:
    """One problem per schema error, named by the field at fault rather than by the object holding it."""
    while error.context:  # "not valid under any of the given schemas": name the part that failed instead
        from jsonschema.exceptions import best_match

        error = best_match([e for e in error.context if e.validator != "type"] or error.context)
    names, message = [str(p) for p in error.absolute_path], error.message
    if error.validator == "required":
        names, message = names + [n for n in error.validator_value if n not in error.instance][:1], "missing"
    elif error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        names, message = names + extra[:1], "unknown field"
    return Problem(path, line, ".".join(names) or "(record)", message)


class _Hashed(io.RawIOBase):
    """A binary file whose bytes go through SHA-256 as they are read."""

    def __init__(self, raw: IO[bytes]):
        self._raw, self.sha = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        if n:
            self.sha.update(memoryview(buffer)[:n])
        return n or 0


def _encoding(raw: IO[bytes]) -> str:
    """UTF-16 when the file starts with its byte-order mark, else UTF-8 (a BOM dropped); `raw` is left at its start."""
    utf16 = raw.read(2) in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    raw.seek(0)
    return "utf-16" if utf16 else "utf-8-sig"


def field_values(path: Path, field: str) -> Iterator[str | None]:
    """The value of `field` on each line of a saved-output file, read as `Reading` reads it (ids trimmed in CSV)
    but neither checked nor made records: None where a line has none to give. For a first look at a file's order;
    raises what reading the file raises (OSError, UnicodeError, csv.Error)."""
    with open(path, "rb") as raw:
        text = io.TextIOWrapper(raw, encoding=_encoding(raw), newline="")
        if path.suffix.lower() == ".csv":
            yield from _csv_ids(text, field)
        else:
            yield from (_json_id(content, field) for content in text if content.strip())


def _csv_ids(text: IO[str], field: str) -> Iterator[str | None]:
    rows = (cells for cells in csv.reader(text) if any(c.strip() for c in cells))
    header = [c.strip() for c in next(rows, [])]
    at = header.index(field) if field in header else len(header)
    for cells in rows:
        yield cells[at].strip() if at < len(cells) else None


def _json_id(content: str, field: str) -> str | None:
    try:
        value = json.loads(content).get(field)
    except (ValueError, AttributeError, RecursionError):  # not JSON, not an object, nested too deep
        return None
    return value if isinstance(value, str) else None


class Reading:
    """The records of one file in file order, as (line, record), read from disk as they are asked for. After the
    last one: `file` (its role, path, layout and SHA-256) and `complete` (every line became a record, so references
    to this file can be checked). CSV rows with cell problems are records too, so their ids stay known."""

    def __init__(self, role: str, path: Path, problems: SavedProblems):
        self.role, self.path, self.problems = role, path, problems
        self.layout = path.suffix.lower().lstrip(".")
        self.complete = False
        self.undecodable = False  # not text: the file has no records, whatever was yielded before
        self._sha: str | None = None

    @property
    def file(self) -> InputFile:
        if self._sha is None:
            raise RuntimeError(f"{self.path} has not been read to its end")
        return InputFile(role=self.role, path=str(self.path), layout=self.layout, sha256=self._sha)

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        kind, where = KINDS[self.role], str(self.path)
        with open(self.path, "rb") as raw:
            encoding = _encoding(raw)
            hashed = _Hashed(raw)
            text = io.TextIOWrapper(io.BufferedReader(hashed, 1 << 16), encoding=encoding, newline="")
            try:
                lines = self._csv(text, kind) if self.layout == "csv" else self._jsonl(text, kind)
                yield from lines
                while text.read(1 << 20):  # a CSV whose header failed: the rest still counts for the hash
                    pass
            except UnicodeDecodeError:
                self._not_text(where)
                return
            self._sha = hashed.sha.hexdigest()

    def _not_text(self, where: str) -> None:
        self.problems.forget(where)
        self.complete, self.undecodable = False, True
        data = self.path.read_bytes()
        self._sha = hashlib.sha256(data).hexdigest()
        try:
            decode_sheet(data)
            self.problems.add(where, 1, "(file)", "not text in a known encoding")  # the stream decoder refused it
        except NotText as exc:
            self.problems.add(where, exc.line, "(file)", exc.message)

    def _csv(self, text: IO[str], kind: _Kind) -> Iterator[tuple[int, Any]]:
        where, problems = str(self.path), self.problems
        reader = csv.reader(text)
        header: list[str] | None = None
        complete, end = True, 0
        try:
            for cells in reader:
                line, end = end + 1, reader.line_num  # a quoted cell may span lines; report where the row starts
                if not any(c.strip() for c in cells):
                    continue
                if header is None:
                    header = [c.strip() for c in cells]
                    if len(header) == 1 and (problem := delimiter_problem(header[0])) is not None:
                        problems.add(where, line, "(file)", problem)
                        return
                    if not _header_ok(where, line, header, kind.columns, problems):
                        return
                elif len(cells) > len(header):
                    problems.add(where, line, "(row)", f"{len(cells)} cells but the header has {len(header)}")
                    complete = False
                else:
                    yield line, kind.from_row(_Row(where, line, dict(zip(header, cells)), problems))
        except csv.Error as exc:
            problems.add(where, reader.line_num, "(file)", f"unreadable CSV: {exc}")
            complete = False
        if header is None:
            problems.add(where, 1, "(file)", "no header row")
        self.complete = complete and header is not None

    def _jsonl(self, text: IO[str], kind: _Kind) -> Iterator[tuple[int, Any]]:
        where, complete = str(self.path), True
        for line, content in enumerate(text, start=1):
            if not content.strip():
                continue
            try:
                yield line, kind.record.model_validate_json(content)
                continue
            except ValidationError as exc:  # a lone surrogate anywhere in the line is refused here too (invalid JSON)
                refused = exc
            complete = False
            if (problem := surrogate_in_line(content)) is not None:
                self.problems.add(where, line, *problem)  # UTF-8 cannot store it in the rows
            else:
                self._refused(where, line, content, kind.record, refused)
        self.complete = complete

    def _refused(self, where: str, line: int, content: str, record: type[SavedLine], refused: ValidationError) -> None:
        """Record the problems of a line the record refused, each named by its field in the record's schema."""
        try:
            data = json.loads(content)
        except json.JSONDecodeError as exc:
            self.problems.add(where, line, "(json)", f"{exc.msg} at column {exc.colno}")
            return
        except RecursionError:
            self.problems.add(where, line, "(json)", "nested too deeply to read (over about 1,000 levels); no "
                                                     "saved record nests more than three")
            return
        errors = sorted(_validator(record).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        first: dict[str, Problem] = {}  # one problem per field: "" breaks both minLength and pattern
        for problem in (_schema_problem(where, line, e) for e in errors):
            first.setdefault(problem.field, problem)
        if not first:  # the schema words nothing the record refused: the record's own words
            field, _, message = field_problem(refused).partition(": ")
            first[field] = Problem(where, line, field, message)
        for problem in first.values():
            self.problems.add(problem.path, problem.line, problem.field, problem.message)


def _header_ok(path: str, line: int, header: list[str], required: tuple[str, ...], problems: SavedProblems) -> bool:
    before = problems.count(path)
    for name in required:
        if name not in header:
            problems.add(path, line, name, f"missing column (the header has: {', '.join(header)})")
    for name in sorted({h for h in header if header.count(h) > 1}):
        problems.add(path, line, name, "column appears more than once")
    return problems.count(path) == before
