"""Quote validation: a citation counts only if its passage was retrieved and holds the quote."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from .text import fold


@dataclass(frozen=True)
class CheckedCitation:
    """One citation as the model gave it, and our verdict on it. `reason` is None exactly when `valid`. (The
    harness's `Citation` is a system's claimed citation before any verdict.)"""

    source_id: str
    quote: str
    valid: bool
    reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def check_quote(source_id: str, quote: str, passages: Iterable[tuple[str, str]], *, min_words: int) -> CheckedCitation:
    """Check one citation against the retrieved passages, given as (source id, text) pairs in rank order.

    Valid when: `source_id` names a retrieved passage, the quote has at least `min_words` words, and the quote
    occurs in a passage with *that* id after normalize() with case folded. Several passages may share an id (a
    system that gives every chunk of a page the page's id): the quote may come from any of them.
    Otherwise the reason says which rule failed.
    """
    folded: dict[str, list[str]] = {}
    for sid, text in passages:
        folded.setdefault(sid, []).append(fold(text))
    needle = fold(quote)
    words = len(needle.split())
    if source_id not in folded:
        return CheckedCitation(source_id, quote, False, f"cited {source_id!r} was not among the retrieved passages")
    if words < min_words:
        return CheckedCitation(source_id, quote, False, f"quote has {words} words; at least {min_words} required")
    if any(needle in text for text in folded[source_id]):
        return CheckedCitation(source_id, quote, True)
    elsewhere = [sid for sid, texts in folded.items() if any(needle in text for text in texts)]
    if elsewhere:
        return CheckedCitation(source_id, quote, False, f"quote is from {elsewhere[0]}, not from the cited {source_id}")
    return CheckedCitation(source_id, quote, False, f"quote does not occur in {source_id}")
