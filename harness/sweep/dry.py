"""`rag-eval sweep --dry-run`: how many embedding and chat calls a sweep needs, and how many the caches hold.

Counting is the system's own (`harness.systems.CountsCalls`): the cells are grouped by the system that counts
them (the bundled chatbot: `harness/systems/chatbot_calls.py`), each group counted by it, and the counts added up
(a request two systems share cannot exist: each keys its own). A cell's documents and cases are read and checked
as the run will read them, only when its system asks. Cells of a system that makes no model call (`offline`) add
nothing; those of a system that cannot count its calls (plug-ins, http) are listed as not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..evaluate import prepare
from ..settings import RunSettings
from ..systems import traits_for
from ..systems.interface import CallPlan, CountsCalls, EmbedTiming
from ..systems.loading import call_counter
from .plan import SweepPlan

__all__ = ["DryRun", "EmbedTiming", "count_calls", "dry_run"]


@dataclass(frozen=True)
class DryRun:
    calls: CallPlan
    not_counted: tuple[str, ...]  # cells of systems whose calls are not ours to count
    embedding: EmbedTiming | None = None  # None: no chunk to embed


def dry_run(plan: SweepPlan) -> DryRun:
    """Count the sweep's distinct embedding and chat calls and the cached ones (see the module docstring)."""
    return count_calls([(cell.label, cell.settings) for cell in plan.cells])


def count_calls(cells: Sequence[tuple[str, RunSettings]], *,
                counter_for: Callable[[str], CountsCalls | None] = call_counter) -> DryRun:
    """The same count for (label, settings) pairs: a sweep's cells, or a single run. `counter_for` finds the
    system that counts a `--system` name's calls (None: it does not)."""
    groups: dict[int, tuple[CountsCalls, list[tuple[str, Any]]]] = {}
    skipped = []
    for label, s in cells:
        counter = counter_for(s.system)
        if counter is not None:
            groups.setdefault(id(counter), (counter, []))[1].append((label, s))
        elif traits_for(s.system).uses_model_servers is not False:  # False: it makes no model call at all
            skipped.append(label)
    counts = [counter.count_calls(group, _read) for counter, group in groups.values()]
    return DryRun(_added([c.calls for c in counts]), tuple(skipped),
                  next((c.embedding for c in counts if c.embedding is not None), None))


def _read(s: Any) -> tuple[list[Any], list[str]]:
    """A cell's documents and its cases' questions, read and label-checked as its run will read them."""
    documents, cases, _ = prepare(s)
    return documents, [c.question for c in cases]


def _added(plans: list[CallPlan]) -> CallPlan:
    """The counts of several systems as one (each counts only its own requests, so none is counted twice)."""
    return CallPlan(*(sum(getattr(p, f.name) for p in plans) for f in fields(CallPlan)))
