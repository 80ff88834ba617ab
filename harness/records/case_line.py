"""A line of the cases file (`cases.jsonl`, the labelled cases of `rag-eval run`): one record, and nothing else
defines a line. The published schema (`harness/schemas/case.schema.json`) is generated from `CaseLine`; the reader
(`harness.cases`) checks a line against that schema first, so a bad line is described field by field, and builds
the public `Case` from the record.

A page of evidence is an object (`source_id`, optional `quote`) or its page id alone; a fact is one string or a
list of accepted alternatives. The record holds both in their long form. Users write this file: it carries no
format version, and every file valid before is valid now.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from annotated_types import Len
from pydantic import BeforeValidator, ConfigDict, Field, StringConstraints, field_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic.types import Strict

from .base import _Record

__all__ = ["CaseEvidence", "CaseLine"]

# Strict types (a JSON string is never a boolean), and patterns read by Python's `re`, as the schema's validator
# reads them (`$` also before a final newline), so the record accepts a line exactly when its schema does.
_CONFIG = ConfigDict(strict=True, regex_engine="python-re")
_Text = Annotated[str, StringConstraints(min_length=1)]
_SourceId = Annotated[str, StringConstraints(pattern=r"^.+#p[1-9][0-9]*$")]
_Alternatives = Annotated[tuple[_Text, ...], Len(min_length=1)]


class CaseEvidence(_Record):
    """A page that answers the case."""

    model_config = _CONFIG

    source_id: _SourceId = Field(description="page-level source id: <path relative to the docs folder>#p<page>")
    quote: _Text | SkipJsonSchema[None] = Field(
        default=None, description="optional: a retrieved chunk counts only if it contains this text")

    @field_validator("quote", mode="before")
    @classmethod
    def _given(cls, value: Any) -> Any:  # absent is None; a line that writes null has no quote to check
        if value is None:
            raise ValueError("a quote is a string; leave the field out for none")
        return value


def _one_page(value: Any) -> Any:
    return {"source_id": value} if type(value) is str else value  # a page id alone is its object's shorthand


def _one_fact(value: Any) -> Any:
    return (value,) if type(value) is str else value  # a lone string is a fact with one wording


_Shorthand = Annotated[_SourceId, Field(description='shorthand for {"source_id": ...}')]
# Lax about the container only (JSON's array is Python's list; the record holds a tuple): the strings stay strict.
_Evidence = Annotated[CaseEvidence, BeforeValidator(_one_page, json_schema_input_type=CaseEvidence | _Shorthand)]
_Fact = Annotated[tuple[_Text, ...], Strict(False), Len(min_length=1),
                  BeforeValidator(_one_fact, json_schema_input_type=_Text | _Alternatives)]


class CaseLine(_Record):
    """A labelled case: a question, the pages that answer it and the facts a correct answer contains."""

    model_config = _CONFIG

    id: Annotated[str, StringConstraints(min_length=1, pattern=r"^\S+$")] = Field(description="unique, no spaces")
    question: _Text
    evidence: tuple[_Evidence, ...] = Field(
        description="pages that answer the question (objects, or plain page ids as shorthand); empty for an "
                    "unanswerable case")
    facts: tuple[_Fact, ...] = Field(
        description="short strings a correct answer contains; a list item holds accepted alternatives")
    abstain: bool = Field(description="true when the documents cannot answer the question")
    notes: str = ""
    tags: tuple[_Text, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseLine:
        """The record of a line's object, read as the line itself would be."""
        return cls.model_validate_json(json.dumps(data))
