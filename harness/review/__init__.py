"""Human review of claims: the reviews file and how reviews apply to a run, the claim book (several reviewers,
resolutions), CSV export and import, agreement between reviewers, rescoring a run against corrected labels, and the
reviewer's name remembered between sessions.
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "store": ("add_reviews", "apply_reviews", "apply_to_run", "load_reviews", "read_reviews", "reviews_path"),
    "book": ("Claim", "Resolution", "Review", "ReviewBook"),
    "csv_io": ("export_csv", "import_csv"),
    "agreement": ("agreement_report",),
    "rescore": ("rescore_run",),
    "reviewer": ("checked_name", "remember_reviewer", "remembered_reviewer", "reviewer_file"),
}
__all__, __getattr__ = lazy_exports("harness.review", _WHERE)
