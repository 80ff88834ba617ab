"""The system interface: what a RAG system gives the harness, what it says about itself, and what it is built from.

This is the seam every outside system meets, so it knows only the harness's own records: nothing of the bundled
chatbot (whose adapter lives in `systems/chatbot.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from ..records import SystemAnswer, SystemReply, field_problem

Progress = Callable[[str, int, int], None]  # (stage, done, total)
# A cell's run settings -> (its documents, the questions of the cases it asks, in order), read and label-checked
# as the run will read them (`harness.evaluate.prepare`)
CellReader = Callable[[Any], tuple[list[Any], list[str]]]


@runtime_checkable
class System(Protocol):
    """What the harness needs of a RAG system."""

    def describe(self) -> dict[str, Any]: ...

    def answer(self, question: str, *, case_id: str) -> SystemAnswer: ...


@runtime_checkable
class Describes(Protocol):
    """What a system may say about itself, as class or instance attributes; `traits_of` fills in the defaults
    of `Traits` for a plug-in that says nothing."""

    kind: str
    uses_model_servers: bool | None
    label_checks_chunks: bool
    uses_prompt_template: bool
    timed_by_harness: bool
    run_settings: tuple[str, ...]


@runtime_checkable
class SeesQuestionsAhead(Protocol):
    """A system that wants every question of the run before the first `answer()` call (the chatbot embeds them
    in batches); the harness calls `questions_ahead` once, with the questions in the order they will be asked. A
    hint only: if it raises, the run goes on as without it."""

    def questions_ahead(self, questions: Sequence[str]) -> None: ...


@dataclass(frozen=True)
class Traits:
    """What a system is and can do, as the harness asks it (instead of testing the `--system` string).

    `kind`: a short name of what it is (`chatbot`, `offline`, `http`, `python`). `uses_model_servers`: it
    answers through model servers of its settings (True: the bundled chatbot; False: it makes no model call;
    None: the harness cannot tell). `label_checks_chunks`: its chunks are our chunker's, so the label check also
    asks that every evidence quote fits in one chunk. `uses_prompt_template`: it answers with `--prompt`, whose
    hash then goes into the manifest. `timed_by_harness`: the harness holds it to `--timeout` per answer (a
    system with its own deadline on every call says False). `run_settings`: the harness's settings for the bundled
    systems (`harness.settings.SYSTEM_SETTINGS`: top_k, chunk_size, chat_model, ...) it is built from; a plug-in
    takes none of them, so its manifest's settings are what its `describe()` says (`harness.report.settings_diff`
    never shows the harness's defaults for it)."""

    kind: str = "python"
    uses_model_servers: bool | None = None
    label_checks_chunks: bool = False
    uses_prompt_template: bool = False
    timed_by_harness: bool = True
    run_settings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallPlan:
    """What a sweep will ask the servers for, counted over distinct requests (a request two cells share is
    made once): embedding texts and chat calls, and how many of each the caches already hold."""

    embed_texts: int
    embed_cached: int
    chat_calls: int
    chat_cached: int

    @property
    def embed_needed(self) -> int:
        return self.embed_texts - self.embed_cached

    @property
    def chat_needed(self) -> int:
        return self.chat_calls - self.chat_cached

    def to_dict(self) -> dict:
        return {"embed_texts": self.embed_texts, "embed_cached": self.embed_cached,
                "embed_needed": self.embed_needed, "chat_calls": self.chat_calls, "chat_cached": self.chat_cached,
                "chat_needed": self.chat_needed}


@dataclass(frozen=True)
class EmbedTiming:
    """One chunk to embed, embedded alone and timed."""

    chunks_needed: int  # distinct chunk texts no cache holds, over every cell
    seconds_per_chunk: float  # the timed call's wall time
    chars: int  # the timed chunk's length
    model: str


@dataclass(frozen=True)
class CallCount:
    """What a system counted of the calls its cells will make (`CountsCalls`): the distinct calls and the cached
    ones, and one chunk embedded and timed (None: nothing to embed)."""

    calls: CallPlan
    embedding: EmbedTiming | None = None


@runtime_checkable
class CountsCalls(Protocol):
    """A system that counts, before anything runs, the model calls its cells will make and how many its caches
    already hold (`rag-eval run --dry-run`, `rag-eval sweep --dry-run`). Asked of the class, since nothing is
    built to count: `cells` are (label, run settings) pairs of this system, `read` reads a cell's documents and
    questions. A request two cells share is counted once. The dry run lists the cells of a system without it as
    not counted, unless its traits say it makes no model call (`uses_model_servers` False)."""

    def count_calls(self, cells: Sequence[tuple[str, Any]], read: CellReader) -> CallCount: ...


def traits_of(system: object) -> Traits:
    """The traits `system` (an object, or its class) declares; the default for each one it does not."""
    defaults = Traits()
    return Traits(**{name: getattr(system, name, getattr(defaults, name)) for name in Traits.__dataclass_fields__})


@dataclass(frozen=True)
class SystemContext:
    """What a system is built from: the run's settings, the documents already read, progress. The built-ins
    get it, and so does a plug-in factory that takes a `context` keyword."""

    settings: Any  # harness.settings.RunSettings (typed loosely to keep this module below settings)
    documents: list[Any]  # pdfrag.pdfs.Document: each PDF's pages, read once
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
