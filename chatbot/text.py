"""The one text normaliser used for every comparison in the project (chunks, quotes, facts)."""

from __future__ import annotations

import re
import unicodedata

_SOFT_HYPHEN = "\u00ad"
# Single and double quote variants, then dash variants, mapped to their ASCII forms.
_QUOTES = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'", "`": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\ufe58": "-", "\ufe63": "-", "\uff0d": "-",
})
# A word broken by a hyphen at the end of a line: "reim-\nbursement" -> "reimbursement".
_LINE_END_HYPHEN = re.compile(r"(\w)-[ \t]*\r?\n[ \t]*(\w)")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Return `text` in the canonical form used for all matching.

    NFKC (so ligatures such as "ﬁ" become "fi"), soft hyphens dropped, words split by a line-end hyphen
    rejoined, curly quotes and dash variants made ASCII, and every run of whitespace folded to one space,
    with no leading or trailing space. Case is kept; callers that match case-insensitively fold it.
    """
    text = unicodedata.normalize("NFKC", text).replace(_SOFT_HYPHEN, "")
    text = _LINE_END_HYPHEN.sub(r"\1\2", text)
    text = text.translate(_QUOTES)
    return _SPACE.sub(" ", text).strip()


# A sentence ends at . ! or ? followed by whitespace and a capital, digit, quote or bracket (so "EUR 0.30" and
# "e.g. this" stay whole).
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, empty ones dropped."""
    return [s for s in (part.strip() for part in _SENTENCE_BREAK.split(text)) if s]


def fold(text: str) -> str:
    """normalize() with case folded: the form in which quotes are looked up in passages and pages."""
    return normalize(text).casefold()
