"""Drafting test cases from pages: select pages, ask the model, verify deterministically, let a human decide,
export the accepted drafts as cases. See docs/drafting.md for the workflow and every check's definition.
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "pipeline": ("DraftRun", "run_drafting"),
    "settings": ("DraftSettings",),
    "records": ("Draft", "read_drafts", "write_drafts"),
    "decisions": ("export_csv", "import_csv"),
    "export": ("to_cases",),
    "judging": ("judge_drafts",),
    "agreement": ("draft_agreement_report",),
}
__all__, __getattr__ = lazy_exports("harness.drafting", _WHERE)
