"""Systems under evaluation: one interface, many implementations, found by name.

A system is any object with `describe() -> dict` (name, version, settings: written into the run's manifest) and
`answer(question, *, case_id) -> SystemAnswer`. `--system` chooses one:

- `chatbot` (default): the bundled Ollama chatbot; `offline`: BM25 + extractive baseline (no model);
- a name registered by an installed package in the entry-point group `pdf_rag_eval.systems`;
- `package.module:factory`: a Python factory returning such an object (resolved from the current directory too);
- `http://…` / `https://…`: a RAG service answering POST `{"case_id", "question"}` with the JSON of
  `harness/schemas/system_reply.schema.json`.
"""

from __future__ import annotations

from ..errors import SystemDown
from .interface import PooledSystem, System, SystemContext, to_answer
from .loading import BUILTIN, ENTRY_POINT_GROUP, is_builtin, load_system

__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "PooledSystem", "System", "SystemContext", "SystemDown", "is_builtin",
           "load_system", "to_answer"]
