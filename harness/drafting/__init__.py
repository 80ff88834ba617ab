"""Drafting test cases from pages: select pages, ask the model, verify deterministically, let a human decide.

See docs/drafting.md for the workflow and every check's definition.
"""

from .decisions import Collection, decide, edit, export_csv, import_csv
from .export import Export, to_case, to_cases
from .pipeline import DraftRun, run_drafting
from .records import Decision, Draft, Provenance, Reason, Verification, read_drafts, write_drafts
from .report import DraftReport, build_report, render_report
from .select import Selection, select_pages
from .settings import DraftSettings
from .verify import Limits, PageView, check_draft

__all__ = ["Collection", "Decision", "Draft", "DraftReport", "DraftRun", "DraftSettings", "Export", "Limits",
           "PageView", "Provenance", "Reason", "Selection", "Verification", "build_report",
           "check_draft", "decide", "edit", "export_csv", "import_csv", "read_drafts", "render_report",
           "run_drafting", "select_pages", "to_case", "to_cases", "write_drafts"]
