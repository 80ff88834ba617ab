"""Metrics: pure functions of one case's `Observation`, and the one registry of metric names.

`matching.py` holds the fact and text rules every metric shares, `observation.py` one case as the metrics see
it, `registry.py` the metric functions and the registry (`REGISTRY`: every fact about a metric).
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "matching": ("INSTRUCTION_LIKE", "NEGATIONS", "NEGATION_WINDOW", "NUMBER_JOINERS", "bounded_starts",
                 "fact_found", "found_in", "instruction_like", "negation_before", "occurs_bounded"),
    "observation": ("Observation", "Retrieved", "covers", "first_rank", "page_of"),
    "registry": ("DEFAULT_KS", "JUDGED_METRICS", "JUDGED_PASS_CHECKS", "MetricSpec", "PASS_CHECKS", "REGISTRY",
                 "TUTORIAL_CHECKS", "TWIN_NOTE", "behaviour", "citation_precision", "claim_support",
                 "claim_support_judged", "claims_supported", "claims_supported_judged", "compute", "describe", "facts",
                 "family", "grounded", "higher_is_better", "hit_at_k", "is_retrieval", "key_point_coverage",
                 "markdown_page", "metric_names", "parse_metric", "passed_of", "quote_valid", "recall_at_k",
                 "reciprocal_rank", "retrieval_recall", "shown_once"),
}
__all__, __getattr__ = lazy_exports("harness.metrics", _WHERE)
