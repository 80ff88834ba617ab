"""The one text normaliser used for every comparison in the project (chunks, quotes, facts)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

# Unicode format characters (category Cf): zero-width spaces and joiners, word joiner, BOM, bidi controls, soft
# hyphen, tags. Invisible on the page, so a quote of what a reader sees must match without them. Listed as ranges
# (Unicode 15.1) because a per-character category lookup would slow every comparison; a test checks the list
# against the running Python's Unicode database.
_FORMAT = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]")
# Single and double quote variants, then dash variants, mapped to their ASCII forms.
_QUOTES = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'", "`": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\ufe58": "-", "\ufe63": "-", "\uff0d": "-",
})
# A word broken by a hyphen at the end of a line: "reim-\nbursement" -> "reimbursement".
_LINE_END_HYPHEN = re.compile(r"(\w)-[ \t]*\r?\n[ \t]*(\w)")


def normalize(text: str) -> str:
    """Return `text` in the canonical form used for all matching.

    NFKC (so ligatures such as "ﬁ" become "fi"), format characters dropped (soft hyphens, zero-width spaces and
    joiners, BOM, bidi controls: Unicode category Cf), words split by a line-end hyphen
    rejoined, curly quotes and dash variants made ASCII, and every run of whitespace folded to one space,
    with no leading or trailing space. Case is kept; callers that match case-insensitively fold it.
    """
    # Each step runs only where it can change something (the same result, a fraction of the time on plain text):
    # NFKC leaves ASCII as it is and every format character is beyond ASCII; a line-end hyphen needs a line end;
    # the only ASCII quote variant is the backtick. str.split() splits on what the regex \s matches.
    ascii_only = text.isascii()
    if not ascii_only:
        text = _FORMAT.sub("", unicodedata.normalize("NFKC", text))
    if "\n" in text:
        text = _LINE_END_HYPHEN.sub(r"\1\2", text)
    if not ascii_only or "`" in text:
        text = text.translate(_QUOTES)
    return " ".join(text.split())


# A sentence ends at . ! or ? (and a closing quote or bracket) followed by whitespace and a capital, digit,
# quote or bracket, unless the word before is an abbreviation: "EUR 0.30", "e.g. This" and "Dr. Weber" stay whole.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?(?=\s+[A-Z0-9\"'(\[])")
_ABBREVIATIONS = frozenset("e.g i.e etc vs cf approx no nr dr mr mrs ms prof st fig p pp z.b bzw ca".split())


def sentence_ends(text: str) -> list[int]:
    """Offsets just past the end of each sentence of `text` but the last: one rule for chunking, the review's
    claim split and the offline baseline."""
    ends = []
    for match in _SENTENCE_END.finditer(text):
        word = text[:match.start()].rsplit(None, 1)[-1].lower() if text[:match.start()].strip() else ""
        if match.group()[0] == "." and word.rstrip(".") in _ABBREVIATIONS:
            continue
        ends.append(match.end())
    return ends


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped, empty ones dropped."""
    bounds = [0, *sentence_ends(text), len(text)]
    return [s for s in (text[a:b].strip() for a, b in zip(bounds, bounds[1:])) if s]


@lru_cache(maxsize=4096)
def fold(text: str) -> str:
    """normalize() with case folded: the form in which quotes are looked up in passages and pages. Remembered
    for recent texts: every case folds its retrieved passages twice (the chatbot's and the harness's quote check),
    and a run retrieves the same few chunks again and again."""
    return normalize(text).casefold()

def find_quote(passage: str, quote: str) -> tuple[str, tuple[int, int] | None]:
    """(normalised passage, span of the quote in it or None). Both are compared with `fold()`, exactly as quote
    validation compares them ("HAUPTSTRASSE" is found in "Hauptstraße"); the span indexes the normalised passage."""
    text, needle = normalize(passage), fold(quote)
    folded, origin = [], []  # casefold may turn one character into several: remember where each came from
    for i, char in enumerate(text):
        for piece in char.casefold():
            folded.append(piece)
            origin.append(i)
    start = "".join(folded).find(needle) if needle else -1
    if start < 0:
        return text, None
    return text, (origin[start], origin[start + len(needle) - 1] + 1)


def cited_passage(passages: Sequence[tuple[str, str]], source_id: str, quote: str) -> str | None:
    """The text to show beside a citation: of the passages (source id, text) with that id, the first holding the
    quote as quote validation finds it, else the first of them; None when none has that id."""
    texts = [text for sid, text in passages if sid == source_id]
    needle = fold(quote)
    return next((text for text in texts if needle and needle in fold(text)), texts[0] if texts else None)


_CUT = re.compile(r" … \[cut: [\d,]+ characters in all\]$")


def clip(text: str, limit: int) -> str:
    """`text` when it has at most `limit` characters; else its start and a marker saying how long it was
    (" … [cut: 6,000,000 characters in all]"), `limit` characters in all, so a clipped text is never cut twice.
    For text from outside (a model's reply, a server's error) that goes into a file people read again."""
    if len(text) <= limit:
        return text
    mark = f" … [cut: {len(text):,} characters in all]"
    return text[:max(limit - len(mark), 0)] + mark


def is_clipped(text: str) -> bool:
    """Whether `text` ends with the marker `clip` puts there: what is left of it is not what was written."""
    return _CUT.search(text) is not None
