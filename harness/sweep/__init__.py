"""Sweeps: a grid of settings as a directory of runs (plan, dry run, run) and its leaderboard.
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "plan": ("SweepPlan", "load_sweep"),
    "dry": ("dry_run",),
    "run": ("resume_plan", "run_sweep"),
    "leaderboard": ("Leaderboard", "build_leaderboard"),
}
__all__, __getattr__ = lazy_exports("harness.sweep", _WHERE)
