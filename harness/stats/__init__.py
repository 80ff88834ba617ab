"""Pure statistics, numbers in and numbers out: paired comparison (score interval, sign-flip p, Holm), the
minimum detectable difference, agreement between raters, the judge floor.
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "paired": ("holm", "mean_interval", "paired_stats", "sign_flip_p"),
    "score_interval": ("paired_score_interval", "tango_interval"),
    "kappa_interval": ("kappa_interval",),
    "judge_floor": ("floor_check",),
    "mde": ("minimum_detectable_difference",),
    "precision_recall": ("per_category", "wilson_interval"),
    "agreement": ("Agreement", "AgreementReport", "measure_agreement"),
}
__all__, __getattr__ = lazy_exports("harness.stats", _WHERE)
