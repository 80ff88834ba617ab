"""The one text normaliser used for every comparison in the project (chunks, quotes, facts)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

# The version of the rule `normalize()` applies. What is stored already normalised and read back as it is (a saved
# index's chunks) records it, and is rebuilt when it differs. 2: numbers keep their forms (`keep_numbers`).
TEXT_RULE = 2

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
    "\u2044": "/", "\u2215": "/",  # fraction slash, division slash
})
# Numbers written in forms of their own, which NFKC would fold into plain digits and so into other numbers
# ("10⁵" into "105", "②①" into "21", "1½" into "11⁄2"). Each keeps a form of its own: a run of superscripts is
# "^" and its ASCII ("10^5", "10^-3"), a run of subscripts "_" and its ASCII ("H_2O"), a circled number
# "(n)" ("(2)(1)"), and every other compatibility form of a number (vulgar fractions, "⒈", "㎡") its NFKC text
# with "/" for the fraction slash and an exponent written "^", set off by a space from a digit it would touch
# ("1 1/2", "m^2").
_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b\u207c\u207d\u207e"
_SUBSCRIPTS = "\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089\u208a\u208b\u208c\u208d\u208e"
_SCRIPT_ASCII = "0123456789+-=()"
_SCRIPT_RUN = re.compile(f"[{_SUPERSCRIPTS}]+|[{_SUBSCRIPTS}]+")
_SCRIPT_TABLE = str.maketrans(_SUPERSCRIPTS + _SUBSCRIPTS, _SCRIPT_ASCII * 2)
# The blocks that hold every other character whose NFKC form has a digit and which is not a digit itself
# (Latin-1 fractions, Number Forms, Enclosed Alphanumerics, CJK enclosed and squared forms, Enclosed Alphanumeric
# Supplement); a test checks this against the running Python's Unicode database.
_NUMBER_BLOCKS = ((0x00bc, 0x00be), (0x2150, 0x218f), (0x2460, 0x24ff), (0x3200, 0x33ff), (0x1f100, 0x1f1ff))


def _number_form(char: str) -> str | None:
    """The form of its own of a character that NFKC turns into a number (see above), or None for any other."""
    plain = unicodedata.normalize("NFKC", char)
    if plain == char or char.isdecimal() or not any(c.isdecimal() for c in plain):
        return None
    if unicodedata.decomposition(char).startswith("<circle>"):
        return f"({plain})"
    plain = plain.translate(_QUOTES)
    return re.sub(r"(?<=[^\W\d])(\d+)$", r"^\1", plain)  # "m2" of "㎡" -> "m^2"


_NUMBER_FORMS = {chr(cp): form for a, b in _NUMBER_BLOCKS for cp in range(a, b + 1)
                 if (form := _number_form(chr(cp))) is not None}
_NUMBER_FORM = re.compile("[" + "".join(_NUMBER_FORMS) + "]")
_ANY_FORM = re.compile(f"[{_SUPERSCRIPTS}{_SUBSCRIPTS}{''.join(_NUMBER_FORMS)}]")  # one scan for the usual none


def _scripts(match: re.Match[str]) -> str:
    run, text, end = match.group(), match.string, match.end()
    gap = " " if end < len(text) and text[end].isnumeric() else ""  # "10⁵7" -> "10^5 7", never "10^57"
    return ("^" if run[0] in _SUPERSCRIPTS else "_") + run.translate(_SCRIPT_TABLE) + gap


def _own_form(match: re.Match[str]) -> str:
    form, text, start, end = _NUMBER_FORMS[match.group()], match.string, match.start(), match.end()
    if form[0].isdecimal() and start and text[start - 1].isnumeric():
        form = " " + form
    if form[-1].isdecimal() and end < len(text) and text[end].isnumeric():
        form += " "
    return form


def keep_numbers(text: str) -> str:
    """`text` with every number written in a form NFKC would fold into plain digits given a form of its own:
    "10⁵" -> "10^5", "H₂O" -> "H_2O", "②①" -> "(2)(1)", "1½" -> "1 1/2" (the first step of `normalize`)."""
    if _ANY_FORM.search(text) is None:
        return text
    return _NUMBER_FORM.sub(_own_form, _SCRIPT_RUN.sub(_scripts, text))


# A word broken by a hyphen at the end of a line: "reim-\nbursement" -> "reimbursement".
_LINE_END_HYPHEN = re.compile(r"(\w)-[ \t]*\r?\n[ \t]*(\w)")


def normalize(text: str) -> str:
    """Return `text` in the canonical form used for all matching.

    Numbers in forms of their own first keep them (`keep_numbers`: "10⁵" -> "10^5", "②①" -> "(2)(1)",
    "1½" -> "1 1/2"), so no number becomes another; then NFKC (so ligatures such as "ﬁ" become "fi"), format
    characters dropped (soft hyphens, zero-width spaces and joiners, BOM, bidi controls: Unicode category Cf),
    words split by a line-end hyphen rejoined, curly quotes, dash variants and fraction slashes made ASCII, and
    every run of whitespace folded to one space,
    with no leading or trailing space. Case is kept; callers that match case-insensitively fold it.
    """
    # Each step runs only where it can change something (the same result, a fraction of the time on plain text):
    # NFKC leaves ASCII as it is and every format character is beyond ASCII; a line-end hyphen needs a line end;
    # the only ASCII quote variant is the backtick. str.split() splits on what the regex \s matches.
    ascii_only = text.isascii()
    if not ascii_only:
        # format characters go first, so that none stands between a digit and a number form beside it
        text = unicodedata.normalize("NFKC", keep_numbers(_FORMAT.sub("", text)))
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


def lone_surrogate(value: Any) -> tuple[str, str, str] | None:
    """(path, the string, the surrogate) for the first string in `value`, dicts and lists walked in order, that holds
    a lone UTF-16 surrogate: legal in JSON as an escape, but not text (UTF-8 cannot encode it, so no file can store
    it). The path is the keys and indexes from the top joined by "." ("" for `value` itself). None when there is
    none. The walk keeps its own stack: a parsed JSON line may nest as deep as the parser allows."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and (bad := next((c for c in item if "\ud800" <= c <= "\udfff"), None)):
                return path, item, bad
            continue
        items = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        stack += reversed([(f"{path}.{key}" if path else str(key), child) for key, child in items])
    return None

