"""Saved answerer outputs for offline scoring: the tutorial CSV layout and its JSONL equivalent.

Chunks (`chunk_id, topic, text`), cases and claim annotations (`case_id, claim, support_chunk_ids`), each a `.csv`
or `.jsonl` file by extension; JSONL lines follow `harness/schemas/saved_*.schema.json`. In CSV, lists are
pipe-separated (empty cell = empty list), a required point may list alternatives separated by `;`, booleans are
true/false/yes/no/1/0 in any case, and an empty `retrieved_chunk_ids` cell means "not saved". Every problem in
every file is raised at once as one InputError, a line per problem: `file:line: field: problem` (CSV lines as an
editor numbers them; the header is line 1).

Files of any size: `read_saved` gives a `SavedStream` that reads each file once, checking every line (its own
problems, duplicate ids, references between the files) as it hands out the cases one at a time, holding only the
chunks and each case id's line. Claims come beside their case when the claims file lists them in the cases' order
(each case's claims together), as an export writes them; in any other order they are held in memory, grouped by
case. Which of the two is decided before the first case is handed out, from a first look at the ids of both files
(`claims_follow_cases`), so nothing is begun twice. Whatever is wrong is one InputError at the end of the reading,
so a caller that wrote as it read (`rag-eval score`) discards what it wrote. `load_saved` reads everything into
one `SavedOutputs`, for small inputs.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..records import in_bulk
from .lines import Reading, SavedProblems, field_values
from .outputs import InputFile, SavedCase, SavedChunk, SavedClaim, SavedOutputs, claims_by_case

__all__ = ["InputFile", "SavedCase", "SavedChunk", "SavedClaim", "SavedOutputs", "SavedStream",
           "claims_follow_cases", "load_saved", "read_saved", "resolve_paths"]


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


def _unique(path: str, records: Sequence[tuple[int, Any]], key: str, problems: SavedProblems) -> None:
    first: dict[str, int] = {}
    for line, record in records:
        _once(path, line, getattr(record, key), key, first, problems)


def _once(path: str, line: int, value: str, key: str, first: dict[str, int], problems: SavedProblems) -> None:
    if value and value in first:
        problems.add(path, line, key, f"duplicate {key.replace('_', ' ')} {value!r} (first on line {first[value]})")
    first.setdefault(value, line)


def _references(path: str, line: int, record: Any, names: tuple[str, ...], known: Any, what: str,
                problems: SavedProblems) -> None:
    for field in names:
        value = getattr(record, field)
        for ref in dict.fromkeys((value,) if isinstance(value, str) else value or ()):
            if ref and ref not in known:
                problems.add(path, line, field, f"unknown {what} {ref!r}")


def claims_follow_cases(cases: Path, claims: Path) -> bool:
    """Whether the claims file lists each case's claims together, in the cases' order (the cases without claims
    left out), so they can be read beside the cases. A first look at the ids alone: nothing is checked, and a file
    that cannot be read this way gives False (the claims are then held, which fits any order; the reading itself
    reports what is wrong). The cases file is read only up to the last case with claims."""
    try:
        groups: list[str | None] = []  # the case id of each run of claims naming one case
        for case_id in field_values(claims, "case_id"):
            if not groups or groups[-1] != case_id:
                groups.append(case_id)
        if len(set(groups)) < len(groups) or None in groups:
            return False
        at = 0
        for case_id in field_values(cases, "case_id"):
            if at == len(groups):
                break
            at += case_id == groups[at]
        return at == len(groups)
    except (OSError, UnicodeError, csv.Error):
        return False


class SavedStream:
    """Saved outputs read once, a case at a time: iterating gives each case with its claims, checking every line on
    the way (its own problems, duplicate ids, references between the files). A case is given only while no problem
    has been found; at the end every problem of every file is one InputError. `files` (each file's path, layout and
    SHA-256) is known after the last case.

    The chunks are read and held first. Claims are read beside the cases (`grouped` False: nothing held) when
    `claims_follow_cases` finds each case's claims together in the cases' order; else every claim is held, grouped
    by case (`grouped` True). Iterate a stream once."""

    def __init__(self, cases: Path, chunks: Path | None, claims: Path | None):
        self.problems = SavedProblems()
        self._cases, self._claims = cases, claims
        self.grouped = claims is not None and not claims_follow_cases(cases, claims)
        self._chunks = None if chunks is None else Reading("chunks", chunks, self.problems)
        held = [] if self._chunks is None else list(self._chunks)
        held = [] if self._chunks is not None and self._chunks.undecodable else held
        if chunks is not None:
            _unique(str(chunks), held, "chunk_id", self.problems)
        self.chunks = tuple(c for _, c in held)
        self._known = {c.chunk_id for c in self.chunks} if self._chunks is not None and self._chunks.complete \
            else None
        self._files: tuple[InputFile, ...] | None = None
        self.held_claims: tuple[SavedClaim, ...] = ()  # grouped: every claim, in file order

    @property
    def has_claims(self) -> bool:
        """A claims file is read (then a case without claims has none annotated, rather than not reviewed)."""
        return self._claims is not None

    @property
    def files(self) -> tuple[InputFile, ...]:
        if self._files is None:
            raise RuntimeError("the saved outputs have not been read to their end")
        return self._files

    def __iter__(self) -> Iterator[tuple[SavedCase, tuple[SavedClaim, ...]]]:
        problems, where = self.problems, str(self._cases)
        claims = self._claims_reader()
        lines: dict[str, int] = {}  # case id -> the line it is first on
        reading, count = Reading("cases", self._cases, problems), 0
        for line, case in reading:
            count += 1
            _once(where, line, case.case_id, "case_id", lines, problems)
            if self._chunks is None and case.retrieved_chunk_ids is None:
                problems.add(where, line, "retrieved_chunk_ids", "empty, and no chunks file to retrieve from")
            elif self._known is not None:
                # Cited ids need not be chunks: citing what was not retrieved is a result (citation precision), not
                # a broken file.
                _references(where, line, case, ("expected_chunk_ids", "retrieved_chunk_ids"), self._known,
                            "chunk id", problems)
            group = claims.of(case.case_id)
            if not problems:
                yield case, group
        if reading.undecodable:
            lines, count = {}, 0
        if reading.complete and not count:
            problems.add(where, 1, "(file)", "no cases")
        claims.finish(lines if reading.complete else None)
        problems.raise_if_any()
        self._files = tuple(f for f in (reading.file, self._chunks.file if self._chunks is not None else None,
                                        claims.file) if f is not None)

    def _claims_reader(self) -> _Claims:
        if self._claims is None:
            return _Claims(None, self._known, self.problems)
        reading = Reading("claims", self._claims, self.problems)
        if not self.grouped:
            return _Claims(reading, self._known, self.problems)
        grouped = _GroupedClaims(reading, self._known, self.problems)
        self.held_claims = tuple(claim for _, claim in grouped.held)
        return grouped


class _Claims:
    """Claims read beside the cases: those of the case at hand are taken while they name it. What is left after the
    last case names no case (a claim naming a case read before cannot be left: `claims_follow_cases` saw to it)."""

    def __init__(self, reading: Reading | None, known: set[str] | None, problems: SavedProblems):
        self.reading, self.known, self.problems = reading, known, problems
        self._lines = iter(reading) if reading is not None else iter(())
        self._pending = self._next()

    @property
    def file(self) -> InputFile | None:
        return self.reading.file if self.reading is not None else None

    def _next(self) -> tuple[int, SavedClaim] | None:
        item = next(self._lines, None)
        if item is not None and self.known is not None:
            _references(str(self.reading.path), item[0], item[1], ("support_chunk_ids",), self.known,  # type: ignore
                        "chunk id", self.problems)
        return item

    def of(self, case_id: str) -> tuple[SavedClaim, ...]:
        group = []
        while self._pending is not None and self._pending[1].case_id == case_id:
            group.append(self._pending[1])
            self._pending = self._next()
        return tuple(group)

    def finish(self, cases: dict[str, int] | None) -> None:
        """Check the claims left (`cases` None: the cases file could not be read whole, so they are not checked
        against it). A claim left naming a case came out of order: only where some line is at fault (its problem
        is reported), as the first look at the ids found the claims in order."""
        while self._pending is not None:
            self._check_case(*self._pending, cases)
            self._pending = self._next()

    def _check_case(self, line: int, claim: SavedClaim, cases: dict[str, int] | None) -> None:
        """The case a claim names must be a case of the cases file (`cases` None: not checked)."""
        if cases is not None:
            _references(str(self.reading.path), line, claim, ("case_id",), cases, "case",  # type: ignore
                        self.problems)


class _GroupedClaims(_Claims):
    """Every claim read first and held, grouped by case, for a claims file in any order."""

    def __init__(self, reading: Reading, known: set[str] | None, problems: SavedProblems):
        super().__init__(reading, known, problems)
        self.held: list[tuple[int, SavedClaim]] = []
        while self._pending is not None:
            self.held.append(self._pending)
            self._pending = self._next()
        self.groups = claims_by_case(claim for _, claim in self.held)

    def of(self, case_id: str) -> tuple[SavedClaim, ...]:
        return self.groups.get(case_id, ())

    def finish(self, cases: dict[str, int] | None) -> None:
        for line, claim in self.held:
            self._check_case(line, claim, cases)


def read_saved(cases_path: str | Path, chunks_path: str | Path | None = None,
               claims_path: str | Path | None = None) -> SavedStream:
    """Saved outputs in either layout (see the module docstring), read once as the stream is iterated; the chunks
    are read here, and whether the claims are held is decided here. Chunks and claims default to `chunks.<ext>` /
    `claims.<ext>` beside the cases file. Without a chunks file, chunk ids are not checked and every case needs
    saved retrieved ids; without a claims file no case has annotated claims. Bad input is one InputError listing
    every problem in every file as `file:line: field: problem`, at the end of the reading."""
    return SavedStream(*resolve_paths(cases_path, chunks_path, claims_path))


@in_bulk
def load_saved(
    cases_path: str | Path, chunks_path: str | Path | None = None, claims_path: str | Path | None = None
) -> SavedOutputs:
    """Load and validate saved outputs in either layout, every record in memory (`read_saved` reads them a case at
    a time). Raises one InputError listing every problem in every file as `file:line: field: problem`."""
    stream = read_saved(cases_path, chunks_path, claims_path)
    pairs = list(stream)
    claims = stream.held_claims if stream.grouped else tuple(claim for _, group in pairs for claim in group)
    return SavedOutputs(tuple(case for case, _ in pairs), stream.chunks, claims, stream.files)
