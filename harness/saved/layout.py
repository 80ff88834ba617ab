"""Saved answerer outputs for offline scoring: the tutorial CSV layout and its JSONL equivalent.

Chunks (`chunk_id, topic, text`), cases and claim annotations (`case_id, claim, support_chunk_ids`), each a `.csv`
or `.jsonl` file by extension; JSONL lines follow `harness/schemas/saved_*.schema.json`. In CSV, lists are
pipe-separated (empty cell = empty list), a required point may list alternatives separated by `;`, booleans are
true/false/yes/no/1/0 in any case, and an empty `retrieved_chunk_ids` cell means "not saved". Every problem in
every file is raised at once as one InputError, a line per problem: `file:line: field: problem` (CSV lines as an
editor numbers them; the header is line 1).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from annotated_types import Len
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from ..errors import InputError
from ..inputs import NotText, decode_sheet, delimiter_problem
from ..records import in_bulk

__all__ = ["InputFile", "SavedCase", "SavedChunk", "SavedClaim", "SavedOutputs", "load_saved", "resolve_paths"]

_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
_MAX_SHOWN = 100


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


class _DataclassJson:
    """JSON round trip for the frozen dataclasses below: tuples are lists in JSON, unknown keys are ignored.
    Not a second record base: the harness's records derive from `records.base._Record` (pydantic); saved outputs stay
    plain dataclasses because `rag-eval score` builds 100k of them (bench/bench_score.py) and they are
    schema-checked as JSON before they are built."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Any:
        return cls(**{f.name: _frozen(data[f.name]) for f in fields(cls) if f.name in data})  # type: ignore[arg-type]


@dataclass(frozen=True)
class SavedChunk(_DataclassJson):
    """A passage that cases refer to by `chunk_id`; `topic` is a label for readers only."""

    chunk_id: str
    text: str
    topic: str = ""


@dataclass(frozen=True)
class SavedCase(_DataclassJson):
    """One labelled question with one answerer's saved output.

    `required_points` holds one tuple per point: its accepted alternative phrasings. `retrieved_chunk_ids` is
    None when the retrieval was not saved (the lexical retriever then supplies it).
    """

    case_id: str
    question: str
    expected_chunk_ids: tuple[str, ...]
    required_points: tuple[tuple[str, ...], ...]
    candidate_answer: str
    cited_chunk_ids: tuple[str, ...]
    should_abstain: bool
    candidate_abstains: bool
    retrieved_chunk_ids: tuple[str, ...] | None = None
    metadata: dict[str, Any] | None = None  # free-form; a run's replay keeps evidence and citation quotes here

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        if data["metadata"] is None:  # optional: the schema allows an object or nothing, never null
            del data["metadata"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SavedCase:
        points = [[p] if isinstance(p, str) else p for p in data["required_points"]]  # a lone phrase is one point
        return super().from_json({**data, "required_points": points})


@dataclass(frozen=True)
class SavedClaim(_DataclassJson):
    """One reviewed claim of a case's answer; empty `support_chunk_ids` means unsupported."""

    case_id: str
    claim: str
    support_chunk_ids: tuple[str, ...]

    @property
    def supported(self) -> bool:
        return bool(self.support_chunk_ids)


@dataclass(frozen=True)
class InputFile(_DataclassJson):
    """One file that was read: its role (cases, chunks, claims), path as given, layout and SHA-256 of its bytes."""

    role: str
    path: str
    layout: str
    sha256: str


@dataclass(frozen=True)
class SavedOutputs:
    """Everything loaded for one scoring: records in file order, and the files they came from."""

    cases: tuple[SavedCase, ...]
    chunks: tuple[SavedChunk, ...]
    claims: tuple[SavedClaim, ...]
    files: tuple[InputFile, ...]

    def claims_by_case(self) -> dict[str, tuple[SavedClaim, ...]]:
        """Claims grouped by case id in file order, in one pass (a scan per case is quadratic at scale)."""
        groups: dict[str, list[SavedClaim]] = {}
        for claim in self.claims:
            groups.setdefault(claim.case_id, []).append(claim)
        return {case_id: tuple(group) for case_id, group in groups.items()}

@dataclass(frozen=True)
class _Problem:
    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


def _raise(problems: list[_Problem]) -> None:
    ordered = sorted(problems, key=lambda p: (p.path, p.line))  # stable: a line's fields keep column order
    shown = [f"  {p}" for p in ordered[:_MAX_SHOWN]]
    shown += [f"  ... and {len(ordered) - _MAX_SHOWN} more"] if len(ordered) > _MAX_SHOWN else []
    raise InputError(f"{len(ordered)} problem{'s' * (len(ordered) > 1)} in the saved outputs:\n" + "\n".join(shown))


def resolve_paths(
    cases_path: str | Path, chunks_path: str | Path | None = None, claims_path: str | Path | None = None
) -> tuple[Path, Path | None, Path | None]:
    """Return the cases, chunks and claims paths. Chunks and claims default to `chunks.<ext>` / `claims.<ext>`
    beside the cases file when present. Raises InputError for a named file that is missing or not .csv/.jsonl."""
    given = [Path(p) for p in (cases_path, chunks_path, claims_path) if p is not None]
    missing = [str(p) for p in given if not p.is_file()]
    if missing:
        raise InputError(f"file not found: {', '.join(missing)}")
    for path in given:
        if path.suffix.lower() not in (".csv", ".jsonl"):
            raise InputError(f"{path}: unknown layout; the file name must end in .csv or .jsonl")
    cases = Path(cases_path)

    def beside(name: str, path: str | Path | None) -> Path | None:
        default = cases.with_name(f"{name}{cases.suffix.lower()}")
        return Path(path) if path is not None else default if default.is_file() else None

    return cases, beside("chunks", chunks_path), beside("claims", claims_path)


class _Row:
    """One CSV row's cells, with typed getters that record problems instead of raising."""

    def __init__(self, path: str, line: int, cells: dict[str, str], problems: list[_Problem]) -> None:
        self.path, self.line, self.cells, self._problems = path, line, cells, problems

    def problem(self, field: str, message: str) -> None:
        self._problems.append(_Problem(self.path, self.line, field, message))

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


def _csv_rows(path: str, text: str, required: tuple[str, ...], problems: list[_Problem]) -> tuple[list[_Row], bool]:
    """Return the data rows of a CSV file, and whether every line could be read into a row."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    rows: list[_Row] = []
    complete, end = True, 0
    try:
        for cells in reader:
            line, end = end + 1, reader.line_num  # a quoted cell may span lines; report where the row starts
            if not any(c.strip() for c in cells):
                continue
            if header is None:
                header = [c.strip() for c in cells]
                if len(header) == 1 and (problem := delimiter_problem(header[0])) is not None:
                    problems.append(_Problem(path, line, "(file)", problem))
                    return [], False
                if not _header_ok(path, line, header, required, problems):
                    return [], False
            elif len(cells) > len(header):
                problems.append(_Problem(path, line, "(row)", f"{len(cells)} cells but the header has {len(header)}"))
                complete = False
            else:
                rows.append(_Row(path, line, dict(zip(header, cells)), problems))
    except csv.Error as exc:
        problems.append(_Problem(path, reader.line_num, "(file)", f"unreadable CSV: {exc}"))
        complete = False
    if header is None:
        problems.append(_Problem(path, 1, "(file)", "no header row"))
    return rows, complete and header is not None


def _header_ok(path: str, line: int, header: list[str], required: tuple[str, ...], problems: list[_Problem]) -> bool:
    before = len(problems)
    for name in required:
        if name not in header:
            problems.append(_Problem(path, line, name, f"missing column (the header has: {', '.join(header)})"))
    for name in sorted({h for h in header if header.count(h) > 1}):
        problems.append(_Problem(path, line, name, "column appears more than once"))
    return len(problems) == before


_Id = Annotated[str, StringConstraints(min_length=1, pattern=r"^\S(.*\S)?$")]
_Phrase = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    metadata: dict[str, Any] | None = None


class _ChunkLine(_Strict):
    chunk_id: _Id
    text: _Phrase
    topic: str = ""


class _CaseLine(_Strict):
    case_id: _Id
    question: _Phrase
    expected_chunk_ids: list[_Id]
    required_points: list[_Phrase | Annotated[list[_Phrase], Len(min_length=1)]]
    candidate_answer: str
    cited_chunk_ids: list[_Id]
    should_abstain: bool
    candidate_abstains: bool
    retrieved_chunk_ids: list[_Id] | None = None


class _ClaimLine(_Strict):
    case_id: _Id
    claim: _Phrase
    support_chunk_ids: list[_Id]


# The published JSON Schemas are the contract; these models accept exactly what they accept (a test checks both
# on the same lines), and are only a fast path: a line they refuse is checked by the schema for its messages.
_FAST: dict[str, type[_Strict]] = {"saved_chunk.schema.json": _ChunkLine, "saved_case.schema.json": _CaseLine,
         "saved_claim.schema.json": _ClaimLine}


def _fast_ok(schema_name: str, data: Any) -> bool:
    try:
        _FAST[schema_name].model_validate(data)
    except ValidationError:
        return False
    return True


@lru_cache(maxsize=None)
def _validator(schema_name: str) -> Draft202012Validator:
    text = resources.files("harness").joinpath(f"schemas/{schema_name}").read_text(encoding="utf-8")
    return Draft202012Validator(json.loads(text))


def _jsonl_objects(path: str, text: str, schema: str, problems: list[_Problem]) -> tuple[list[tuple[int, dict]], bool]:
    """Return (line, object) for every schema-valid line of a JSONL file, and whether every line was valid."""
    objects, complete = [], True
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        try:
            data = json.loads(content)
        except json.JSONDecodeError as exc:
            problems.append(_Problem(path, line, "(json)", f"{exc.msg} at column {exc.colno}"))
            complete = False
            continue
        if _fast_ok(schema, data):
            objects.append((line, data))
            continue
        errors = sorted(_validator(schema).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
        first: dict[str, _Problem] = {}  # one problem per field: "" breaks both minLength and pattern
        for problem in (_schema_problem(path, line, e) for e in errors):
            first.setdefault(problem.field, problem)
        problems += first.values()
        complete = complete and not errors
        if not errors:
            objects.append((line, data))
    return objects, complete


def _schema_problem(path: str, line: int, error: Any) -> _Problem:
    """One problem per schema error, named by the field at fault rather than by the object holding it."""
    while error.context:  # "not valid under any of the given schemas": name the part that failed instead
        error = best_match([e for e in error.context if e.validator != "type"] or error.context)
    names, message = [str(p) for p in error.absolute_path], error.message
    if error.validator == "required":
        names, message = names + [n for n in error.validator_value if n not in error.instance][:1], "missing"
    elif error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        names, message = names + extra[:1], "unknown field"
    return _Problem(path, line, ".".join(names) or "(record)", message)


def _chunk_from_row(row: _Row) -> SavedChunk:
    return SavedChunk(row.text("chunk_id", required=True), row.text("text", required=True), row.text("topic"))


def _case_from_row(row: _Row) -> SavedCase:
    return SavedCase(
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
    return SavedClaim(
        row.text("case_id", required=True), row.text("claim", required=True), row.items("support_chunk_ids"))


# role -> (required CSV columns, CSV row reader, JSON reader, JSON Schema file)
_KINDS: dict[str, tuple[tuple[str, ...], Callable[[_Row], Any], Callable[[dict], Any], str]] = {
    "chunks": (("chunk_id", "text"), _chunk_from_row, SavedChunk.from_json, "saved_chunk.schema.json"),
    "cases": (("case_id", "question", "expected_chunk_ids", "required_points", "candidate_answer", "cited_chunk_ids",
               "should_abstain", "candidate_abstains"), _case_from_row, SavedCase.from_json, "saved_case.schema.json"),
    "claims": (("case_id", "claim", "support_chunk_ids"), _claim_from_row, SavedClaim.from_json,
               "saved_claim.schema.json"),
}


@dataclass(frozen=True)
class _Loaded:
    file: InputFile
    records: list[tuple[int, Any]]  # (line, record); CSV rows with cell problems are kept so ids stay known
    complete: bool  # every line became a record, so references to this file can be checked


def _load_file(role: str, path: Path, problems: list[_Problem]) -> _Loaded:
    columns, from_row, from_json, schema = _KINDS[role]
    raw = path.read_bytes()
    file = InputFile(role, str(path), path.suffix.lower().lstrip("."), hashlib.sha256(raw).hexdigest())
    try:
        text = decode_sheet(raw)
    except NotText as exc:
        problems.append(_Problem(str(path), exc.line, "(file)", exc.message))
        return _Loaded(file, [], False)
    if file.layout == "csv":
        rows, complete = _csv_rows(str(path), text, columns, problems)
        return _Loaded(file, [(row.line, from_row(row)) for row in rows], complete)
    objects, complete = _jsonl_objects(str(path), text, schema, problems)
    return _Loaded(file, [(line, from_json(data)) for line, data in objects], complete)


def _unique(loaded: _Loaded, key: str, problems: list[_Problem]) -> None:
    first: dict[str, int] = {}
    for line, record in loaded.records:
        value = getattr(record, key)
        if value and value in first:
            problem = f"duplicate {key.replace('_', ' ')} {value!r} (first on line {first[value]})"
            problems.append(_Problem(loaded.file.path, line, key, problem))
        first.setdefault(value, line)


def _references(loaded: _Loaded, names: tuple[str, ...], known: set[str], what: str, problems: list[_Problem]) -> None:
    for line, record in loaded.records:
        for field in names:
            value = getattr(record, field)
            for ref in dict.fromkeys((value,) if isinstance(value, str) else value or ()):
                if ref and ref not in known:
                    problems.append(_Problem(loaded.file.path, line, field, f"unknown {what} {ref!r}"))


def _cross_check(chunks: _Loaded | None, cases: _Loaded, claims: _Loaded | None, problems: list[_Problem]) -> None:
    _unique(cases, "case_id", problems)
    if cases.complete and not cases.records:
        problems.append(_Problem(cases.file.path, 1, "(file)", "no cases"))
    if chunks is None:
        problems += [
            _Problem(cases.file.path, line, "retrieved_chunk_ids", "empty, and no chunks file to retrieve from")
            for line, case in cases.records if case.retrieved_chunk_ids is None
        ]
    else:
        _unique(chunks, "chunk_id", problems)
    if chunks is not None and chunks.complete:
        known = {c.chunk_id for _, c in chunks.records}
        # Cited ids need not be chunks: citing what was not retrieved is a result (citation precision), not
        # a broken file.
        ids = ("expected_chunk_ids", "retrieved_chunk_ids")
        _references(cases, ids, known, "chunk id", problems)
        if claims is not None:
            _references(claims, ("support_chunk_ids",), known, "chunk id", problems)
    if claims is not None and cases.complete:
        _references(claims, ("case_id",), {c.case_id for _, c in cases.records}, "case", problems)


@in_bulk
def load_saved(
    cases_path: str | Path, chunks_path: str | Path | None = None, claims_path: str | Path | None = None
) -> SavedOutputs:
    """Load and validate saved outputs in either layout (see the module docstring).

    Chunks and claims default to `chunks.<ext>` / `claims.<ext>` beside the cases file. Without a chunks file,
    chunk ids are not checked and every case needs saved retrieved ids; without a claims file no case has
    annotated claims. Raises one InputError listing every problem in every file as `file:line: field: problem`.
    """
    cases_file, chunks_file, claims_file = resolve_paths(cases_path, chunks_path, claims_path)
    problems: list[_Problem] = []
    chunks = None if chunks_file is None else _load_file("chunks", chunks_file, problems)
    cases = _load_file("cases", cases_file, problems)
    claims = None if claims_file is None else _load_file("claims", claims_file, problems)
    _cross_check(chunks, cases, claims, problems)
    if problems:
        _raise(problems)
    loaded = [x for x in (cases, chunks, claims) if x is not None]
    return SavedOutputs(
        cases=tuple(r for _, r in cases.records),
        chunks=tuple(r for _, r in chunks.records) if chunks else (),
        claims=tuple(r for _, r in claims.records) if claims else (),
        files=tuple(x.file for x in loaded),
    )
