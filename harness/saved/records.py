"""The records of saved outputs: chunks, cases and claims as read from either layout (`harness.saved.layout`), the
files they came from, and all of them at once (`SavedOutputs`, for small inputs and tests)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

__all__ = ["InputFile", "SavedCase", "SavedChunk", "SavedClaim", "SavedOutputs", "claims_by_case"]


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _frozen(value: Any) -> Any:
    return tuple([_frozen(v) if isinstance(v, list) else v for v in value]) if isinstance(value, list) else value


@lru_cache(maxsize=None)
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]


@lru_cache(maxsize=None)
def _known(cls: type) -> frozenset[str]:
    return frozenset(_names(cls))


class _DataclassJson:
    """JSON round trip for the frozen dataclasses below: tuples are lists in JSON, unknown keys are ignored.
    Not a second record base: the harness's records derive from `records.base._Record` (pydantic); saved outputs stay
    plain dataclasses because `rag-eval score` builds 100k of them (bench/bench_score.py) and they are
    schema-checked as JSON before they are built."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Any:
        # one pass over the keys given (a line the fast models of `lines` accept is built by them instead)
        known = _known(cls)  # type: ignore[arg-type]
        return cls(**{name: _frozen(value) if isinstance(value, list) else value  # type: ignore[arg-type]
                      for name, value in data.items() if name in known})


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
        points = data["required_points"]
        if any(isinstance(p, str) for p in points):  # a lone phrase is one point
            data = {**data, "required_points": [[p] if isinstance(p, str) else p for p in points]}
        return super().from_json(data)


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

    @property
    def has_claims(self) -> bool:
        """A claims file was read (then a case without claims has none annotated, rather than not reviewed)."""
        return any(f.role == "claims" for f in self.files)

    def with_claims(self) -> Iterator[tuple[SavedCase, tuple[SavedClaim, ...]]]:
        """Each case in file order with its claims in file order."""
        claims = self.claims_by_case()
        return ((case, claims.get(case.case_id, ())) for case in self.cases)

    def claims_by_case(self) -> dict[str, tuple[SavedClaim, ...]]:
        return claims_by_case(self.claims)


def claims_by_case(claims: Iterable[SavedClaim]) -> dict[str, tuple[SavedClaim, ...]]:
    """Claims grouped by case id in file order, in one pass (a scan per case is quadratic at scale)."""
    groups: dict[str, list[SavedClaim]] = {}
    for claim in claims:
        groups.setdefault(claim.case_id, []).append(claim)
    return {case_id: tuple(group) for case_id, group in groups.items()}
