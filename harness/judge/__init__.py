"""A model judge as one more reviewer: `rag-eval judge RUN` asks a model whether each claim of each answer is
supported by the retrieved passages, validates the quote it gives like any citation, and stores its verdicts in
the reviews file under `judge:<model>@<digest>`; `harness/judged/` measures it against people before any
number uses it, and `calibrate` draws the random sample people review first.
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "run": ("JudgeResult", "JudgeSettings", "judge_run"),
    "calibrate": ("draw_sample",),
}
__all__, __getattr__ = lazy_exports("harness.judge", _WHERE)
