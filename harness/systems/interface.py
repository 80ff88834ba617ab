"""The system interface: what a RAG system gives the harness, and the records it returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from chatbot.answer import Answer
from chatbot.errors import RagError
from chatbot.hosts import HostPool
from chatbot.model_server import ModelServer
from chatbot.pdfs import Document

from ..records import Citation, Passage, SystemAnswer, SystemReply, field_problem

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@runtime_checkable
class System(Protocol):
    """What the harness needs of a RAG system."""

    def describe(self) -> dict[str, Any]: ...

    def answer(self, question: str, *, case_id: str) -> SystemAnswer: ...


@runtime_checkable
class PooledSystem(System, Protocol):
    """A system that can answer through any of several model servers (the bundled chatbot with several
    `--host`): the harness spreads cases over `pool` and asks `answer_with` through the server it picked."""

    pool: HostPool

    def answer_with(self, question: str, *, case_id: str, repeat: int, client: ModelServer) -> SystemAnswer: ...


class SystemDown(RagError):
    """The system cannot answer any question now (its server is gone): the run stops and can be resumed."""


@dataclass(frozen=True)
class SystemContext:
    """What a built-in system is built from: the run's settings, the documents already read, progress."""

    settings: Any  # harness.settings.RunSettings (typed loosely to keep this module below settings)
    documents: list[Document]
    progress: Progress | None = None
    status: Callable[[str], None] | None = None  # one-line news such as "loading qwen3:4b…"


def to_answer(value: Any, *, raw: str = "") -> SystemAnswer:
    """A system's return value as a SystemAnswer: one already, or a dict in the HTTP reply's shape.
    Raises ValueError naming the field that breaks the contract."""
    if isinstance(value, SystemAnswer):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"answer() returned {type(value).__name__}; expected a SystemAnswer or a dict with "
                         "answer, retrieved, citations")
    try:
        return SystemReply.model_validate(value).to_answer(raw)
    except ValidationError as exc:
        raise ValueError(field_problem(exc)) from exc


def from_chatbot(a: Answer) -> SystemAnswer:
    """The chatbot's answer record as the harness reads it; the harness re-validates every citation."""
    return SystemAnswer(
        answer=a.model_answer, abstained=a.status != "answered", raw=a.raw, usage=dict(a.usage),
        retrieved=tuple(Passage(source_id=h.chunk.source_id, text=h.chunk.text, rank=h.rank, score=h.score)
                        for h in a.hits),
        citations=tuple(Citation(source_id=c.source_id, quote=c.quote) for c in a.citations),
        malformed="; ".join(a.reasons) or "malformed reply" if a.status == "malformed_output" else None,
        error=a.error if a.status == "error" else None,
        details={"shown": a.text, "thinking_chars": a.thinking_chars, "done_reason": a.done_reason,
                 "reasons": list(a.reasons)})
