"""pdf-rag-eval's evaluation harness: judge any RAG system on labelled cases; a model
judge only ever as one more reviewer, measured against people (`rag-eval judge`).

The public surface: the records a system returns (`SystemAnswer`, `Passage`, `Citation`) and a run writes
(`Row`, `Summary`, `Manifest`), the system interface, and the library calls behind `rag-eval run`, `score` and
`compare` (`RunSettings` and `run_evaluation`, `score_to_run`, `compare_runs`). They are imported on first use
(PEP 562), so `rag-eval --help` does not import pydantic, numpy or the model client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdfrag.lazy import lazy_exports

if TYPE_CHECKING:
    from .cases import Case as Case
    from .cases import Evidence as Evidence
    from .cases import load_cases as load_cases
    from .evaluate import run_evaluation as run_evaluation
    from .records import Citation as Citation
    from .records import Manifest as Manifest
    from .records import Passage as Passage
    from .records import Row as Row
    from .records import Summary as Summary
    from .records import SystemAnswer as SystemAnswer
    from .report.compare import compare_runs as compare_runs
    from .saved.to_run import score_to_run as score_to_run
    from .settings import RunSettings as RunSettings
    from .systems import System as System
    from .systems import load_system as load_system

_WHERE = {
    "cases": ("Case", "Evidence", "load_cases"),
    "evaluate": ("run_evaluation",),
    "records": ("Citation", "Manifest", "Passage", "Row", "Summary", "SystemAnswer"),
    "report.compare": ("compare_runs",),
    "saved.to_run": ("score_to_run",),
    "settings": ("RunSettings",),
    "systems": ("System", "load_system"),
}
__all__, __getattr__ = lazy_exports("harness", _WHERE)
