"""The system interface, and loading a system from its `--system` name."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from chatbot.errors import InputError, RagError
from chatbot.pdfs import Document

from ..records import SystemAnswer, SystemReply, field_problem

ENTRY_POINT_GROUP = "pdf_rag_eval.systems"
Progress = Callable[[str, int, int], None]  # (stage, done, total)


@runtime_checkable
class System(Protocol):
    """What the harness needs of a RAG system."""

    def describe(self) -> dict[str, Any]: ...

    def answer(self, question: str, *, case_id: str) -> SystemAnswer: ...


class SystemDown(RagError):
    """The system cannot answer any question now (its server is gone): the run stops and can be resumed."""


@dataclass(frozen=True)
class SystemContext:
    """What a built-in system is built from: the run's settings, the documents already read, progress."""

    settings: Any  # harness.settings.RunSettings (typed loosely to keep this module below settings)
    documents: list[Document]
    progress: Progress | None = None


def _chatbot(ctx: SystemContext) -> System:
    from .chatbot import ChatbotSystem
    return ChatbotSystem.open(ctx)


def _offline(ctx: SystemContext) -> System:
    from .offline import OfflineSystem
    return OfflineSystem.open(ctx)


BUILTIN: dict[str, Callable[[SystemContext], System]] = {"chatbot": _chatbot, "offline": _offline}


def is_builtin(spec: str) -> bool:
    return spec in BUILTIN


def load_system(spec: str, ctx: SystemContext) -> System:
    """The system named by `spec` (see the package docstring); errors say what to fix."""
    if spec in BUILTIN:
        return BUILTIN[spec](ctx)
    if spec.startswith(("http://", "https://")):
        from .http import HttpSystem
        return HttpSystem(spec, ctx.settings)
    if ":" in spec:
        return _checked(spec, _call_factory(spec, _import_factory(spec), ctx))
    plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if spec in plugins:
        return _checked(spec, _call_factory(spec, plugins[spec].load(), ctx))
    known = ", ".join([*BUILTIN, *sorted(plugins)])
    raise InputError(f"--system {spec!r}: unknown system; use one of {known}, package.module:factory or an "
                     "http(s):// address")


def _import_factory(spec: str) -> Callable[..., Any]:
    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path and "" not in sys.path:  # as `python -m` does: console scripts do not
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"--system {spec!r}: cannot import {module_name!r} ({exc}); run from the folder that "
                         "holds it or install it") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise InputError(f"--system {spec!r}: {module_name} has no callable {attr!r}")
    return factory


def _call_factory(spec: str, factory: Callable[..., Any], ctx: SystemContext) -> Any:
    """A factory is called with no arguments, or with `docs=` (the --docs path) when it takes that parameter."""
    try:
        wants_docs = "docs" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        wants_docs = False
    return factory(docs=ctx.settings.docs) if wants_docs else factory()


def _checked(spec: str, system: Any) -> System:
    missing = [name for name in ("describe", "answer") if not callable(getattr(system, name, None))]
    if missing:
        raise InputError(f"--system {spec!r}: the factory returned {type(system).__name__}, which has no "
                         f"{' or '.join(missing)}(); see README 'Evaluate your own RAG system'")
    return system


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
