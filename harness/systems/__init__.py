"""Systems under evaluation: one interface, many implementations, found by name.

A system is any object with `describe() -> dict` (name, version, settings: written into the run's manifest) and
`answer(question, *, case_id) -> SystemAnswer`. It may say what it is and can do with the attributes of
`Traits` (`kind`, `uses_model_servers`, `label_checks_chunks`, ...); the harness asks those, never the name.
One that defines `questions_ahead(questions)` is given every question of the run before the first answer.
`--system` chooses one:

- `chatbot` (default): the bundled Ollama chatbot; `offline`: BM25 + extractive baseline (no model);
- a name registered by an installed package in the entry-point group `pdf_rag_eval.systems`;
- `package.module:factory`: a Python factory returning such an object (resolved from the current directory too);
- `http://…` / `https://…`: a RAG service answering POST `{"case_id", "question"}` with the JSON of
  `harness/schemas/system_reply.schema.json`.
"""

from __future__ import annotations

from ..errors import SystemDown
from .chatbot import PooledSystem
from .interface import Describes, SeesQuestionsAhead, System, SystemContext, Traits, to_answer, traits_of
from .loading import BUILTIN, ENTRY_POINT_GROUP, load_system, traits_for

__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "Describes", "PooledSystem", "SeesQuestionsAhead", "System",
           "SystemContext", "SystemDown", "Traits", "load_system", "to_answer", "traits_for", "traits_of"]
