"""Metrics: pure functions of plain data, and the one registry of metric names.

Every function returns a float in [0, 1], or None when the metric does not apply to the case. None is never
folded into 0 or 1; summaries count it separately.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from chatbot.text import fold

from .cases import Evidence


@dataclass(frozen=True)
class Retrieved:
    """A retrieved chunk as the metrics see it: rank from 1, its page id and its text."""

    rank: int
    page_id: str
    text: str


def _covers(item: Retrieved, evidence: Evidence) -> bool:
    """A chunk is relevant to an evidence item when it comes from that page and holds its quote, if any."""
    if item.page_id != evidence.source_id:
        return False
    return evidence.quote is None or fold(evidence.quote) in fold(item.text)


def first_rank(retrieved: Sequence[Retrieved], evidence: Evidence) -> int | None:
    """Rank of the first retrieved chunk relevant to one evidence item, or None."""
    return next((r.rank for r in sorted(retrieved, key=lambda r: r.rank) if _covers(r, evidence)), None)


def hit_at_k(retrieved: Sequence[Retrieved], evidence: Sequence[Evidence], k: int) -> float | None:
    """Hit@k: 1.0 if any of the top k chunks is relevant to any evidence item, else 0.0; None without evidence."""
    if not evidence:
        return None
    top = [r for r in retrieved if r.rank <= k]
    return float(any(_covers(r, e) for r in top for e in evidence))


def recall_at_k(retrieved: Sequence[Retrieved], evidence: Sequence[Evidence], k: int) -> float | None:
    """Recall@k: share of evidence items covered by at least one of the top k chunks; None without evidence."""
    if not evidence:
        return None
    top = [r for r in retrieved if r.rank <= k]
    return sum(any(_covers(r, e) for r in top) for e in evidence) / len(evidence)


def reciprocal_rank(retrieved: Sequence[Retrieved], evidence: Sequence[Evidence]) -> float | None:
    """1 / rank of the first chunk relevant to any evidence item; 0.0 if none is; None without evidence."""
    if not evidence:
        return None
    ranks = [r for r in (first_rank(retrieved, e) for e in evidence) if r is not None]
    return 1.0 / min(ranks) if ranks else 0.0


def fact_found(answer: str, alternatives: Sequence[str]) -> bool:
    """Whether any alternative occurs in the answer, case-insensitively, on word boundaries, after normalize()."""
    text = fold(answer)
    for alt in alternatives:
        needle = re.escape(fold(alt))
        if not needle:
            continue
        # \b only works next to word characters; elsewhere require a non-word neighbour or the text edge.
        if re.search(rf"(?<![\w]){needle}(?![\w])", text):
            return True
    return False


def fact_recall(answer: str, facts: Sequence[Sequence[str]], *, abstain: bool) -> float | None:
    """Share of facts found in the answer; None when there are no facts or the case should abstain."""
    if not facts or abstain:
        return None
    return sum(fact_found(answer, f) for f in facts) / len(facts)


def behaviour(abstain: bool, answered: bool) -> float:
    """1.0 when the system answered an answerable case or gave no answer to an unanswerable one, else 0.0."""
    return float(answered != abstain)


def quote_validity(status: str, has_citations: bool) -> float | None:
    """1.0 when every citation passed validation (status answered), 0.0 when a citation failed,
    None when there was nothing to validate (no citation, malformed reply or error)."""
    if status == "answered":
        return 1.0
    if status == "invalid_citation":
        return 0.0
    return None


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric family. `at_k` families get one metric per k, named `<family>@<k>`."""

    family: str
    at_k: bool
    higher_is_better: bool
    description: str


REGISTRY: dict[str, MetricSpec] = {m.family: m for m in (
    MetricSpec("hit", True, True, "any relevant chunk in the top k (null without evidence)"),
    MetricSpec("recall", True, True, "share of evidence items covered by the top k (null without evidence)"),
    MetricSpec("rr", False, True, "reciprocal rank of the first relevant chunk (null without evidence)"),
    MetricSpec("facts", False, True, "share of labelled facts found in the answer (null when none or abstain)"),
    MetricSpec("behaviour", False, True, "answered when it should, abstained when it should"),
    MetricSpec("quote_valid", False, True, "every citation passed quote validation (null without citations)"),
    MetricSpec("claims_supported", False, True, "share of reviewed claims supported (null until reviewed)"),
)}
DEFAULT_KS = (1, 2, 4)
RETRIEVAL_FAMILIES = ("hit", "recall", "rr")


def metric_names(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Every metric name of a run, in display order."""
    names: list[str] = []
    for spec in REGISTRY.values():
        names.extend(f"{spec.family}@{k}" for k in ks) if spec.at_k else names.append(spec.family)
    return names


def parse_metric(name: str, ks: Sequence[int] = DEFAULT_KS) -> str:
    """Check a metric name given by a user; the error lists the valid ones."""
    if name not in metric_names(ks):
        raise ValueError(f"unknown metric {name!r}; choose one of: {', '.join(metric_names(ks))}")
    return name
