"""Saved answerer outputs for offline scoring: the tutorial CSV layout and its JSONL equivalent.

Chunks (`chunk_id, topic, text`), cases and claim annotations (`case_id, claim, support_chunk_ids`), each a `.csv`
or `.jsonl` file by extension; JSONL lines follow `harness/schemas/saved_*.schema.json`. In CSV, lists are
pipe-separated (empty cell = empty list), a required point may list alternatives separated by `;`, booleans are
true/false/yes/no/1/0 in any case, and an empty `retrieved_chunk_ids` cell means "not saved". Every problem in
every file is raised at once as one InputError, a line per problem: `file:line: field: problem` (CSV lines as an
editor numbers them; the header is line 1).

Files of any size: `open_saved` reads every file once to check it (lines, duplicate ids, references between the
files), holding only the chunks and each case id's line, then hands out the cases one at a time, read again from
disk (`SavedSource`). Claims come beside their case when the claims file lists them in the cases' order (each
case's claims together), as a replay or an export writes them; in any other order they are grouped in memory
first. `load_saved` reads everything into one `SavedOutputs`, for small inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..records import in_bulk
from .lines import Problems, Reading
from .records import InputFile, SavedCase, SavedChunk, SavedClaim, SavedOutputs, claims_by_case

__all__ = ["InputFile", "SavedCase", "SavedChunk", "SavedClaim", "SavedOutputs", "SavedSource", "load_saved",
           "open_saved", "resolve_paths"]


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


@dataclass(frozen=True)
class SavedSource:
    """Saved outputs checked in full by `open_saved`: the chunks, and the cases and claims read again from their
    files as they are asked for. A file that changed since it was checked is an InputError when it is read."""

    chunks: tuple[SavedChunk, ...]
    files: tuple[InputFile, ...]
    claims_in_order: bool  # each case's claims together, in the cases' order: read beside the cases

    def _file(self, role: str) -> InputFile | None:
        return next((f for f in self.files if f.role == role), None)

    @property
    def has_claims(self) -> bool:
        """A claims file was read (then a case without claims has none annotated, rather than not reviewed)."""
        return self._file("claims") is not None

    def cases(self) -> Iterator[SavedCase]:
        return _again(self._file("cases"))  # type: ignore[arg-type]

    def claims(self) -> Iterator[SavedClaim]:
        file = self._file("claims")
        return _again(file) if file is not None else iter(())

    def with_claims(self) -> Iterator[tuple[SavedCase, tuple[SavedClaim, ...]]]:
        """Each case in file order with its claims in file order."""
        if not self.has_claims:
            return ((case, ()) for case in self.cases())
        if not self.claims_in_order:  # grouped in memory first: the one case where claims are all held
            groups = claims_by_case(self.claims())
            return ((case, groups.get(case.case_id, ())) for case in self.cases())
        return _merged(self.cases(), self.claims())


def _merged(cases: Iterator[SavedCase], claims: Iterator[SavedClaim]) -> Iterator[tuple[SavedCase, tuple]]:
    pending = next(claims, None)
    for case in cases:
        group = []
        while pending is not None and pending.case_id == case.case_id:
            group.append(pending)
            pending = next(claims, None)
        yield case, tuple(group)
    if pending is not None or next(claims, None) is not None:
        raise InputError("the claims file changed while it was read (a claim after the last case); run again")


def _again(file: InputFile) -> Iterator[Any]:
    """The records of a file checked before, read again; a file that is not the one checked is an InputError."""
    problems = Problems()
    reading = Reading(file.role, Path(file.path), problems)
    for _, record in reading:
        if problems:
            break
        yield record
    if problems or reading.undecodable or reading.file.sha256 != file.sha256:
        raise InputError(f"{file.path}: the file changed while it was read (its SHA-256 is not the one checked); "
                         "run again when nothing writes it")


def _unique(path: str, records: Sequence[tuple[int, Any]], key: str, problems: Problems) -> None:
    first: dict[str, int] = {}
    for line, record in records:
        _once(path, line, getattr(record, key), key, first, problems)


def _once(path: str, line: int, value: str, key: str, first: dict[str, int], problems: Problems) -> None:
    if value and value in first:
        problems.add(path, line, key, f"duplicate {key.replace('_', ' ')} {value!r} (first on line {first[value]})")
    first.setdefault(value, line)


def _references(path: str, line: int, record: Any, names: tuple[str, ...], known: Any, what: str,
                problems: Problems) -> None:
    for field in names:
        value = getattr(record, field)
        for ref in dict.fromkeys((value,) if isinstance(value, str) else value or ()):
            if ref and ref not in known:
                problems.add(path, line, field, f"unknown {what} {ref!r}")


@dataclass
class _CasesChecked:
    file: InputFile
    lines: dict[str, int]  # case id -> the line it is first on
    complete: bool


def _check_cases(path: Path, chunks: Reading | None, known: set[str] | None, problems: Problems) -> _CasesChecked:
    """Every case line: its own problems, a duplicate id, and chunk ids that name no chunk."""
    where, count = str(path), 0
    lines: dict[str, int] = {}
    reading = Reading("cases", path, problems)
    for line, case in reading:
        count += 1
        _once(where, line, case.case_id, "case_id", lines, problems)
        if chunks is None and case.retrieved_chunk_ids is None:
            problems.add(where, line, "retrieved_chunk_ids", "empty, and no chunks file to retrieve from")
        elif known is not None:
            # Cited ids need not be chunks: citing what was not retrieved is a result (citation precision), not a
            # broken file.
            _references(where, line, case, ("expected_chunk_ids", "retrieved_chunk_ids"), known, "chunk id",
                        problems)
    if reading.undecodable:
        lines, count = {}, 0
    if reading.complete and not count:
        problems.add(where, 1, "(file)", "no cases")
    return _CasesChecked(reading.file, lines, reading.complete)


def _check_claims(path: Path, cases: _CasesChecked, known: set[str] | None, problems: Problems) -> tuple[InputFile,
                                                                                                         bool]:
    """Every claim line: its own problems and ids that name no chunk or case; and whether the claims come in the
    cases' order."""
    where, in_order, last = str(path), True, 0
    reading = Reading("claims", path, problems)
    for line, claim in reading:
        if known is not None:
            _references(where, line, claim, ("support_chunk_ids",), known, "chunk id", problems)
        if cases.complete:
            _references(where, line, claim, ("case_id",), cases.lines, "case", problems)
        at = cases.lines.get(claim.case_id, 0)
        in_order, last = in_order and at >= last, max(last, at)
    return reading.file, in_order


def open_saved(
    cases_path: str | Path, chunks_path: str | Path | None = None, claims_path: str | Path | None = None
) -> SavedSource:
    """Check saved outputs in either layout (see the module docstring) and return them, ready to be read a case at
    a time. Chunks and claims default to `chunks.<ext>` / `claims.<ext>` beside the cases file. Without a chunks
    file, chunk ids are not checked and every case needs saved retrieved ids; without a claims file no case has
    annotated claims. Raises one InputError listing every problem in every file as `file:line: field: problem`."""
    cases_path, chunks_path, claims_path = resolve_paths(cases_path, chunks_path, claims_path)
    problems = Problems()
    chunks, held = None, []
    if chunks_path is not None:
        chunks = Reading("chunks", chunks_path, problems)
        held = list(chunks)
        held = [] if chunks.undecodable else held
        _unique(str(chunks_path), held, "chunk_id", problems)
    known = {c.chunk_id for _, c in held} if chunks is not None and chunks.complete else None
    cases = _check_cases(cases_path, chunks, known, problems)
    claims_file, in_order = (None, True) if claims_path is None else _check_claims(claims_path, cases, known,
                                                                                  problems)
    problems.raise_if_any()
    files = tuple(f for f in (cases.file, chunks.file if chunks is not None else None, claims_file) if f is not None)
    return SavedSource(tuple(c for _, c in held), files, in_order)


@in_bulk
def load_saved(
    cases_path: str | Path, chunks_path: str | Path | None = None, claims_path: str | Path | None = None
) -> SavedOutputs:
    """Load and validate saved outputs in either layout, every record in memory (`open_saved` reads them a case at
    a time). Raises one InputError listing every problem in every file as `file:line: field: problem`."""
    source = open_saved(cases_path, chunks_path, claims_path)
    return SavedOutputs(tuple(source.cases()), source.chunks, tuple(source.claims()), source.files)
