"""The fact and text rules every metric shares: a fact found in an answer (`fact_found`: folded, bounded, one
number never part of another), a negation just before it, an answer that reads as an instruction to the
grader. Pure functions of text."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator, Sequence

from pdfrag.text import fold

cached_fold = lru_cache(maxsize=65536)(fold)


# Digits joined by these (thousands or decimal separators, thin and narrow no-break spaces, and the "^" of an
# exponent, as `normalize()` writes "10⁵") are one number: "160" is not found in "EUR 1,160", "1.160" or "1 160",
# "5" is not found in "1.5 days", "10" not in "10^5".
NUMBER_JOINERS = ",.\u2009\u202f\u00a0 ^"


def fact_found(answer: str, alternatives: Sequence[str]) -> bool:
    """Whether any alternative occurs in the answer, case-insensitively, after normalize(), on word
    boundaries, and never as part of a longer number (see `NUMBER_JOINERS`)."""
    return found_in(fold(answer), alternatives)


def found_in(folded: str, alternatives: Sequence[str]) -> bool:
    return any(occurs_bounded(folded, cached_fold(alternative)) for alternative in alternatives)  # facts repeat: cached


def occurs_bounded(folded: str, needle: str) -> bool:
    """Whether `needle` occurs in `folded` with no word character (regex `\\w`) right before or after it and,
    where its first or last character is a digit, no digit joined to it by one of `NUMBER_JOINERS`. The same
    as searching the regex `(?<!\\w)(?<!\\d[J])needle(?!\\w)(?![J]\\d)` (digit sides only), without compiling
    one per fact: that cost ~0.4 ms per fact and run, more than the search."""
    if not needle:
        return False
    number_first, number_last = needle[0].isdigit(), needle[-1].isdigit()
    start = folded.find(needle)
    while start >= 0:  # the loop of `bounded_starts`, without a generator: this one runs per fact and case
        if _bounded(folded, start, start + len(needle), number_first, number_last):
            return True
        start = folded.find(needle, start + 1)
    return False


def bounded_starts(folded: str, needle: str) -> Iterator[int]:
    """Where `needle` occurs in `folded` by the rule of `occurs_bounded`, first to last."""
    if not needle:
        return
    number_first, number_last = needle[0].isdigit(), needle[-1].isdigit()
    start = folded.find(needle)
    while start >= 0:
        if _bounded(folded, start, start + len(needle), number_first, number_last):
            yield start
        start = folded.find(needle, start + 1)


def _bounded(folded: str, start: int, end: int, number_first: bool, number_last: bool) -> bool:
    return _free_before(folded, start, number=number_first) and _free_after(folded, end, number=number_last)


# Words that deny what follows them, in the languages of the bundle and its neighbours; a word ending in "n't"
# counts too. `negation_before` looks at the three words before a found fact.
NEGATIONS = frozenset({"not", "no", "never", "none", "neither", "nor", "without", "cannot", "kein", "keine", "keinen",
                       "keinem", "keiner", "nicht", "nie", "niemals", "ohne", "pas", "jamais", "sans", "nunca", "sin"})
NEGATION_WINDOW = 3


def negation_before(folded: str, alternatives: Sequence[str]) -> str | None:
    """The negation word within `NEGATION_WINDOW` words before an occurrence of the fact in the folded answer
    ("not 160", "no more than 160", "isn't 160"), or None. A hint for a reviewer: the fact rule finds "160" in
    "not 160" all the same."""
    for alternative in alternatives:
        needle = cached_fold(alternative)
        if needle not in folded:  # most alternatives: no generator made
            continue
        for start in bounded_starts(folded, needle):
            words = _WORDS.findall(folded, max(0, start - 60), start)[-NEGATION_WINDOW:]
            for i in range(len(words) - 1, -1, -1):
                if (words[i] in NEGATIONS or words[i].endswith(("n't", "n’t"))) and not _bound(words[i + 1:]):
                    return words[i]
    return None


_WORDS = re.compile(r"[\w'’]+")
_BOUNDS = {"more", "less", "later", "earlier", "fewer", "longer", "exceed", "exceeding", "over", "mehr", "weniger",
           "später", "über"}


def _bound(after: Sequence[str]) -> bool:
    """A negation that sets a limit ("no more than 160", "not exceeding 160", "nicht mehr als 160") states the fact
    rather than denying it."""
    return bool(after) and after[0] in _BOUNDS


# Text that speaks to a grader or a model rather than to the user who asked.
INSTRUCTION_LIKE = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|preceding)\s+"
    r"(?:instructions?|prompts?|rules?|messages?)"
    r"|\b(?:grade|mark|score|rate|evaluate)\s+(?:this|the|my)\s+(?:answer|response|reply|output)?\s*as\s+"
    r"(?:correct|right|true|passed|perfect|supported|valid)"
    r"|\byou\s+are\s+now\b|\bsystem\s+prompt\b|\bnew\s+instructions?\s*:"
    r"|\bas\s+an\s+ai\s+(?:language\s+)?model\b", re.IGNORECASE)


_TRIGGERS = ("ignore", "disregard", "forget", "grade", "mark", "score", "rate", "evaluate", "you are now", "prompt",
             "instruction", "as an ai")


def instruction_like(answer: str) -> str | None:
    """The first instruction-like span of an answer (`INSTRUCTION_LIKE`), or None."""
    lower = answer.lower()
    if not any(word in lower for word in _TRIGGERS):  # most answers: no word the pattern starts from
        return None
    match = INSTRUCTION_LIKE.search(" ".join(answer.split()))
    return match.group(0) if match else None


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"  # what `\w` matches in a str pattern


def _free_before(text: str, i: int, *, number: bool) -> bool:
    if i == 0:
        return True
    if _word(text[i - 1]):
        return False
    return not (number and i >= 2 and text[i - 1] in NUMBER_JOINERS and text[i - 2].isdecimal())


def _free_after(text: str, end: int, *, number: bool) -> bool:
    if end == len(text):
        return True
    if _word(text[end]):
        return False
    return not (number and end + 1 < len(text) and text[end] in NUMBER_JOINERS and text[end + 1].isdecimal())
