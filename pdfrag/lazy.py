"""Lazy package exports (PEP 562): a package names what it re-exports, and each name is imported on first use.

`rag-eval --help` and `rag-eval compare` must not pay for the model client, pydantic and numpy before their
arguments are parsed; a package `__init__` that imports everything it re-exports would make them.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(package: str, where: dict[str, tuple[str, ...]]) -> tuple[list[str], Callable[[str], Any]]:
    """`(__all__, __getattr__)` for `package`, whose names in `where[module]` live in `package.module`."""
    module_of = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return sorted(module_of), __getattr__
