"""Saved outputs of any system: their layouts (CSV / JSONL), scoring them (`rag-eval score`), and a run's
outputs written in that layout.
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "layout": ("load_saved",),
    "to_run": ("score_saved",),
    "from_run": ("write_replay",),
}
__all__, __getattr__ = lazy_exports("harness.saved", _WHERE)
