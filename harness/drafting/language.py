"""A small language guess: the dominant Unicode script, then, for Latin script, the stop-word profile.

Enough to notice a question in English about a German page (a known failure of test-set generators); not a
language identifier. Codes: `en de fr es it nl pt` for Latin text with stop words, `latin` for Latin text without
any, otherwise the script name in lower case (`cyrillic`, `greek`, `cjk`, `arabic`, ...), `unknown` without
letters.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from pdfrag.text import fold

_STOP = {
    "en": "the a an and or of to in on for is are was were be by with what which who how when where does do can "
          "must should at from this that it as not",
    "de": "der die das und oder ist sind ein eine einen dem den des zu im in mit von für auf wie was wer wann wo "
          "nicht ich sie es werden wird muss kann bei nach",
    "fr": "le la les un une des et ou est sont du de en dans pour sur avec qui que quoi quel quelle quand où "
          "comment ne pas doit peut au aux il elle",
    "es": "el la los las un una y o es son del de en con para por que qué cuál cuándo dónde cómo no debe puede "
          "al se su",
    "it": "il lo la gli le un una e o è sono del della di in con per che chi quale quando dove come non deve può "
          "al nel si",
    "nl": "de het een en of is zijn van in op met voor wat wie welke wanneer waar hoe niet moet kan bij naar er "
          "dat die",
    "pt": "o a os as um uma e ou é são do da de em com para por que qual quando onde como não deve pode ao no na "
          "se",
}
STOP_WORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _STOP.items()}
ALL_STOP_WORDS = frozenset().union(*STOP_WORDS.values())
_WORD = re.compile(r"\w+")
_SCRIPT_NAMES = {"CJK": "cjk", "HIRAGANA": "cjk", "KATAKANA": "cjk"}


def script(text: str) -> str:
    """The script most letters of `text` belong to, from their Unicode names (`latin`, `cyrillic`, ...)."""
    counts: Counter[str] = Counter()
    for ch in text:
        if ch.isalpha():
            first = unicodedata.name(ch, "UNKNOWN").split()[0]
            counts[_SCRIPT_NAMES.get(first, first.lower())] += 1
    return counts.most_common(1)[0][0] if counts else "unknown"


def stop_word_scores(text: str) -> dict[str, int]:
    """How many of the text's words are stop words of each Latin-script language."""
    words = _WORD.findall(fold(text))
    return {lang: sum(w in stops for w in words) for lang, stops in STOP_WORDS.items()}


def guess(text: str) -> str:
    """The language code of `text` (see the module docstring); ties go to the first language listed."""
    found = script(text)
    if found != "latin":
        return found
    scores = stop_word_scores(text)
    best = max(scores, key=lambda lang: scores[lang])
    return best if scores[best] else "latin"


def same_language(question: str, page_language: str) -> tuple[bool, str]:
    """(whether the question may be in the page's language, the question's guessed language).

    A Latin-script question counts as the page's language unless another language's stop words outnumber the
    page language's in it: short questions often share a word or two with several languages."""
    found = guess(question)
    if script(question) != ("latin" if page_language in STOP_WORDS or page_language == "latin" else page_language):
        return found == page_language, found
    if found in ("latin", page_language) or page_language not in STOP_WORDS:
        return True, found
    scores = stop_word_scores(question)
    return scores[page_language] >= scores[found], found
