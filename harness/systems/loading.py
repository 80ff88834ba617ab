"""Loading a system from its `--system` name: the built-ins, entry points, `package.module:factory`, HTTP."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from pdfrag.asking import PromptTemplate

from ..errors import InputError
from .chatbot import ChatbotSystem
from .http import HttpSystem
from .interface import CountsCalls, System, SystemContext
from .offline import OfflineSystem
from .seam import unstorable
from .traits import traits_for

ENTRY_POINT_GROUP = "pdf_rag_eval.systems"

_BUILTIN_CLASSES: dict[str, type[ChatbotSystem] | type[OfflineSystem]] = {"chatbot": ChatbotSystem,
                                                                            "offline": OfflineSystem}
BUILTIN: dict[str, Callable[[SystemContext], System]] = {name: cls.open for name, cls in _BUILTIN_CLASSES.items()}


def load_system(spec: str, ctx: SystemContext) -> System:
    """The system named by `spec` (see the package docstring); errors say what to fix."""
    if spec in BUILTIN:
        return BUILTIN[spec](ctx)
    if spec.startswith(("http://", "https://")):
        return HttpSystem.open(spec, ctx.settings)
    if ":" in spec:
        return _checked(spec, _call_factory(spec, _import_factory(spec), ctx))
    plugins = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if spec in plugins:
        return _checked(spec, _call_factory(spec, plugins[spec].load(), ctx))
    known = ", ".join([*BUILTIN, *sorted(plugins)])
    raise InputError(f"--system {spec!r}: unknown system; use one of {known}, package.module:factory or an "
                     "http(s):// address")


def call_counter(spec: str) -> CountsCalls | None:
    """The system `spec` names as its call counter, when it counts its calls (`CountsCalls`): a built-in is asked
    without being built; a plug-in or a service is not loaded to ask, so its calls are not counted (None)."""
    return counter_of(_BUILTIN_CLASSES.get(spec))


def prompt_template_for(spec: str, path: str | None) -> PromptTemplate | None:
    """The prompt template the system `spec` answers with, read and checked before it is built (`--prompt`, or
    its own when `path` is None): a built-in that declares `uses_prompt_template` says which; any other system
    uses none of ours (None)."""
    system = _BUILTIN_CLASSES.get(spec)
    return system.prompt_template(path) if system is not None and traits_for(spec).uses_prompt_template else None


def counter_of(system: object) -> CountsCalls | None:
    """`system` (a class or an object) when it counts its calls, else None."""
    return system if isinstance(system, CountsCalls) else None


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
    """A factory is called with the keywords it takes of `docs=` (the --docs path) and `context=` (the
    SystemContext the built-ins get: the run's settings, the documents already read, progress); with none if
    it takes neither."""
    try:
        wanted = set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        wanted = set()
    offered = {"docs": ctx.settings.docs, "context": ctx}
    try:
        return factory(**{name: value for name, value in offered.items() if name in wanted})
    except Exception as exc:  # the user's own code failed while building the system: say which, and why
        raise InputError(f"--system {spec!r}: the factory raised {type(exc).__name__}: {exc}") from exc


def described(spec: str, system: System) -> dict[str, Any]:
    """`system.describe()`, checked: a dict JSON can hold (it is written into the manifest), else an InputError
    naming the system and what to fix."""
    try:
        description = system.describe()
    except Exception as exc:  # the user's own code: say which, and why
        raise InputError(f"--system {spec!r}: describe() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(description, dict):
        raise InputError(f"--system {spec!r}: describe() returned {type(description).__name__}; return a dict "
                         "such as {'name': 'my-rag', 'version': '3', 'settings': {...}}")
    problem = unstorable(description, "describe()")
    if problem is not None:
        raise InputError(f"--system {spec!r}: {problem}; describe() must return JSON values (it goes into the "
                         "manifest)")
    return description


def _checked(spec: str, system: Any) -> System:
    if inspect.isclass(system):  # `return MyRag` instead of `return MyRag()`
        raise InputError(f"--system {spec!r}: the factory returned the class {system.__name__}, not an object; "
                         f"return {system.__name__}(...) instead")
    missing = [name for name in ("describe", "answer") if not callable(getattr(system, name, None))]
    if missing:
        raise InputError(f"--system {spec!r}: the factory returned {type(system).__name__}, which has no "
                         f"{' or '.join(missing)}(); see docs/your-system.md")
    return system
