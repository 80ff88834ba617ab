"""A line of saved outputs, the input of `rag-eval score`: a chunk, a case or a claim annotation, in either layout
(`harness.saved.layout`), and the record of a file read.

One record per line kind, and nothing else defines a line: a JSONL line is validated by the record itself, the
published schemas (`harness/schemas/saved_*.schema.json`) are generated from it, and a line the record refuses is
described field by field from that generated schema. A CSV row is made the same record from its cells, each cell
checked where it is read (its problems named there), so a row with a bad cell still gives its ids.
Users write these files: they carry no format version, and every file valid before is valid now.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

from annotated_types import Len
from pydantic import BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic.types import Strict

from .base import _Record

__all__ = ["InputFile", "SavedCase", "SavedChunk", "SavedClaim", "SavedLine"]

_Id = Annotated[str, StringConstraints(min_length=1, pattern=r"^\S(.*\S)?$")]
_Phrase = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]
_Alternatives = Annotated[tuple[_Phrase, ...], Len(min_length=1)]


def _one_point(value: Any) -> Any:
    return (value,) if type(value) is str else value  # a lone phrase is one point


# A required point: its accepted phrasings, written as a list of them or as one phrase. Lax about the list only
# (JSON's array is Python's list; the record holds a tuple): the phrases stay strict.
_Point = Annotated[tuple[_Phrase, ...], Strict(False), Len(min_length=1),
                   BeforeValidator(_one_point, json_schema_input_type=_Phrase | _Alternatives)]
_METADATA = "Free-form; ignored by scoring."
_L = TypeVar("_L", bound="SavedLine")


class SavedLine(_Record):
    """The base of a saved line: strict types (a JSON string is never a number), unknown fields refused, and
    `metadata` left out of `to_json` when absent (a file's line has an object or nothing there)."""

    model_config = ConfigDict(strict=True)

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        if data.get("metadata", 0) is None:
            del data["metadata"]
        return data

    @classmethod
    def from_json(cls: type[_L], data: dict[str, Any]) -> _L:
        """The record of a line's object, read as the line itself would be (`to_json`'s inverse)."""
        return cls.model_validate_json(json.dumps(data))


class SavedChunk(SavedLine):
    """A passage that cases can expect, cite, retrieve or name as claim support."""

    chunk_id: _Id = Field(description="Unique within the file.")
    text: _Phrase = Field(description="The passage; the lexical retriever searches it.")
    topic: str = Field(default="", description="Optional label, shown to readers only.")
    metadata: dict[str, Any] | None = Field(default=None, description=_METADATA)


class SavedCase(SavedLine):
    """A question, its labels and one answerer's saved output, scored offline by `rag-eval score`."""

    case_id: _Id = Field(description="Unique within the file.")
    question: _Phrase
    expected_chunk_ids: tuple[_Id, ...] = Field(
        description="Chunks that answer the question; empty when the documents do not answer it.")
    required_points: tuple[_Point, ...] = Field(
        description="Points a correct answer must contain. Each item is a phrase, or a list of accepted alternative "
                    "phrases; matched case-insensitively on word boundaries after normalisation. The record holds "
                    "each point as its list of alternatives.")
    candidate_answer: str = Field(description="The saved answer text; may be empty when the candidate abstained.")
    cited_chunk_ids: tuple[_Id, ...] = Field(description="Chunks the answer cites.")
    should_abstain: bool = Field(description="True when the documents do not answer the question.")
    candidate_abstains: bool = Field(description="True when the saved answer declined to answer.")
    retrieved_chunk_ids: tuple[_Id, ...] | None = Field(
        default=None, description="Chunks the answerer retrieved, best first. Absent or null: the lexical retriever "
                                  "supplies the top k.")
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="Free-form. Scoring reads four keys when present (a run's saved outputs have them): `citations`, "
                    "an ordered list of {source_id, quote}, one per cited id in the order of cited_chunk_ids (the "
                    "n-th citation of an id takes the n-th entry of that id, so two citations of one page keep their "
                    "own quotes; an object {source_id: quote}, as older files have it, gives every citation of an id "
                    "that one quote); `evidence`, a list of {source_id, quote?} for the expected passages; `tags`; "
                    "`min_quote_words`. Without `citations` no quote is checked.")


class SavedClaim(SavedLine):
    """One claim a reviewer found in a saved answer, with the chunks that support it."""

    case_id: _Id = Field(description="A case_id of the cases file.")
    claim: _Phrase
    support_chunk_ids: tuple[_Id, ...] = Field(
        description="Chunks that support the claim; empty means the claim is unsupported.")
    metadata: dict[str, Any] | None = Field(default=None, description=_METADATA)

    @property
    def supported(self) -> bool:
        return bool(self.support_chunk_ids)


class InputFile(_Record):
    """One file that was read: its role (cases, chunks, claims), path as given, layout and SHA-256 of its bytes (a
    run's `manifest.json` lists them under `inputs.saved`)."""

    role: str
    path: str
    layout: str
    sha256: str
