"""The record base every harness record derives from, helpers for building and reading records, and how much of a
model's text the files people read again keep."""

from __future__ import annotations

import dataclasses
import functools
import gc
from collections.abc import Callable, Mapping
from typing import Any, Final, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

# Text a model writes into a file people read again (the reviews file, the drafts file) is stored to at most these
# many characters, cut with a marker (`pdfrag.text.clip`): far above any real quote, note, question or fact, so
# only a runaway reply reaches them, and such a text never passes a check (docs/hardening.md).
QUOTE_CHARS = 5_000  # a judge's or a drafted quote (a chunk is 2,000 characters by default)
NOTE_CHARS = 2_000  # a note or reason: a judge's, a claim's note, a draft judge's reason, a parametric answer
QUESTION_CHARS = 1_000  # a drafted question
TERM_CHARS = 200  # a drafted fact, or the term an unanswerable draft says it changed
SOURCE_ID_CHARS = 500  # the source id a judge names
# NaN and infinities are written as their bare names by `model_dump_json` ("constants"), never as null: null means
# "not applicable" in a row, and a bare NaN is not JSON, so `Row.line` can refuse it instead of storing a lie.
JSON_INF_NAN: Final = "constants"


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan=JSON_INF_NAN)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def fields_of(value: Any, record: type) -> dict[str, Any]:
    """The fields of the dataclass `record` as `value` holds them: a file's line record and the record it carries
    (a line of the drafts or reviews file and its draft, review or resolution) are built from one another."""
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(record)}


def format_problem(data: Mapping[str, Any], reads: int) -> str | None:
    """Why this code cannot read a file (or line) of format `data["format"]`, or None: a newer version than
    `reads`, or no version number at all. A file written before format versions has none and is format 1. One
    wording for every versioned file: run manifests, drafts and their manifests, the reviews file."""
    version = data.get("format", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return f"format: {version!r} is not a format version (this pdf-rag-eval reads 1 to {reads})"
    if version > reads:
        return (f"format: {version} was written by a newer pdf-rag-eval (this one reads formats 1 to {reads}); "
                "upgrade pdf-rag-eval to read it")
    return None


def field_problem(exc: ValidationError) -> str:
    """The first problem of a validation error as `field.path: message`."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


_P = ParamSpec("_P")
_R = TypeVar("_R")


def in_bulk(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """For a function that builds many records at once: Python's cyclic garbage collector pauses while it runs.
    Records hold no reference cycles, and with 100k of them alive every collection walks them all again: about
    a third of `rag-eval score`'s time (bench/bench_score.py). Reference counting still frees everything else at
    once; cyclic garbage made meanwhile (a caught exception and its traceback) waits for the next collection."""

    @functools.wraps(fn)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        was_on = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    return paused
