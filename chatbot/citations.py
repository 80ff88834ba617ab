"""The answer path's citations: each checked against the hits it retrieved, with the one quote rule
(`pdfrag.citations.check_quote`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdfrag.citations import CheckedCitation, check_quote

if TYPE_CHECKING:  # a type only: checking a quote needs neither the index nor the model client it imports
    from .index import Hit


def validate_citation(source_id: str, quote: str, hits: list[Hit], *, min_words: int) -> CheckedCitation:
    """Check one citation against the retrieved passages (see `check_quote`)."""
    return check_quote(source_id, quote, [(hit.chunk.source_id, hit.chunk.text) for hit in hits],
                       min_words=min_words)
