"""Systems under evaluation: one interface, many implementations, found by name.

A system is any object with `describe() -> dict` (name, version, settings: written into the run's manifest) and
`answer(question, *, case_id) -> SystemAnswer`. It may say what it is and can do with the attributes of
`Traits` (`kind`, `uses_model_servers`, `label_checks_chunks`, ...); the harness asks those, never the name.
One that defines `questions_ahead(questions)` is given every question of the run before the first answer; a
built-in whose class defines `count_calls(cells, read)` (`CountsCalls`) counts a dry run's model calls itself.
`--system` chooses one:

- `chatbot` (default): the bundled Ollama chatbot; `offline`: BM25 + extractive baseline (no model);
- a name registered by an installed package in the entry-point group `pdf_rag_eval.systems`;
- `package.module:factory`: a Python factory returning such an object (resolved from the current directory too);
- `http://…` / `https://…`: a RAG service answering POST `{"case_id", "question"}` with the JSON of
  `harness/schemas/system_reply.schema.json`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..errors import SystemDown
from .interface import (
    CallCount,
    CountsCalls,
    Describes,
    SeesQuestionsAhead,
    System,
    SystemContext,
    Traits,
    to_answer,
    traits_of,
)
from .traits import traits_for

if TYPE_CHECKING:
    from .chatbot import PooledSystem
    from .loading import BUILTIN, ENTRY_POINT_GROUP, load_system

# Imported when first asked for: the systems themselves (the chatbot's model clients, `openai`) are not needed to
# ask a run's system its traits, which the report does.
_LAZY = {"PooledSystem": ".chatbot", "BUILTIN": ".loading", "ENTRY_POINT_GROUP": ".loading",
         "load_system": ".loading"}

__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "CallCount", "CountsCalls", "Describes", "PooledSystem",
           "SeesQuestionsAhead", "System", "SystemContext", "SystemDown", "Traits", "load_system", "to_answer",
           "traits_for", "traits_of"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
