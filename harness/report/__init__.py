"""Reading runs: the HTML report of a run (optionally beside another), the comparison of two runs and its text
view, and the rows as CSV.
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "html": ("render_report",),
    "compare": ("Comparison", "compare_runs"),
    "compare_text": ("render_markdown", "render_table"),
    "csv_export": ("rows_csv",),
}
__all__, __getattr__ = lazy_exports("harness.report", _WHERE)
