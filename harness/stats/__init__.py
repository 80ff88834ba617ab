"""Pure statistics, numbers in and numbers out: paired comparison (bootstrap interval, sign-flip p, Holm), the
minimum detectable difference, agreement between raters.
"""

from chatbot.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "paired": ("exact_sign_flip", "holm", "mean_interval", "paired_stats"),
    "mde": ("minimum_detectable_difference",),
    "agreement": ("Agreement", "AgreementReport", "measure_agreement"),
}
__all__, __getattr__ = lazy_exports("harness.stats", _WHERE)
