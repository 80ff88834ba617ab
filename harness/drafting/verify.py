"""Deterministic checks of one draft against the pages: every failure is a named `Reason`.

Pure functions of strings: no model, no I/O. Quotes are looked up as the label check does (`fold()`: normalize
and case-fold), facts with the `facts` metric's matcher, so a draft that passes here passes `rag-eval check`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pdfrag.text import fold, is_clipped

from ..metrics.matching import fact_found
from ..records import QUESTION_CHARS, QUOTE_CHARS, TERM_CHARS
from .language import ALL_STOP_WORDS, guess, same_language
from .records import Reason

_WORD = re.compile(r"\w+")
# Phrases that only make sense to someone looking at the page: a user of the chatbot has no "above".
_DEICTIC = re.compile(
    r"\b(?:(?:this|that|the|these|above|following|given|provided|said|attached|current)\s+"
    r"(?:document|documents|text|passage|passages|page|pages|section|excerpt|extract|context|paragraph|snippet|"
    r"source|handbook|manual|report|file|article)\b"
    r"|the\s+above\b|mentioned\s+above\b|(?:above|below)[- ]mentioned\b"
    r"|according\s+to\s+(?:the|this)\s+(?:text|document|passage|page|excerpt|context|source))",
    re.IGNORECASE)


@dataclass(frozen=True)
class Limits:
    """Thresholds of the checks. A question is a near copy of its quote when they share a run of at least
    `copy_ngram` words, or when at least `copy_overlap` of its content words are in the quote and they share a
    run of 3 words. Questions with content-word overlap of at least `lexical_overlap` are tagged `lexical`."""

    min_quote_words: int = 4
    max_fact_words: int = 6
    copy_ngram: int = 5
    copy_overlap: float = 0.8
    lexical_overlap: float = 0.5


@dataclass(frozen=True)
class PageView:
    """The collection as the checks see it: folded page texts, and folded chunk texts per page."""

    pages: Mapping[str, str]  # page id -> fold(page text)
    chunks: Mapping[str, Sequence[str]]  # page id -> fold(chunk text) of each chunk of the page
    languages: Mapping[str, str]  # page id -> language guess of the page


@dataclass(frozen=True)
class Checked:
    """What the checks found: reasons (empty = passed), tags, evidence pages and the copy measurements."""

    reasons: tuple[Reason, ...]
    tags: tuple[str, ...]
    evidence: tuple[str, ...]
    overlap: float
    longest_ngram: int
    language: dict


_WRAP = r"""(?:\.\.\.|\u2026|["'\u201c\u201d\u2018\u2019\u00ab\u00bb\s])+"""  # ellipses, quotation marks
_WRAPPING = re.compile(rf"^{_WRAP}|{_WRAP}$")


def strip_wrapping(quote: str) -> str:
    """The quote without the quotation marks and ellipses small models put around it ("...like this..."); the
    words inside must still be verbatim on the page."""
    return _WRAPPING.sub("", quote)


def words(text: str) -> list[str]:
    """Lower-cased word tokens after fold()."""
    return _WORD.findall(fold(text))


def content_words(text: str) -> set[str]:
    """Words that carry meaning: not stop words (of any listed language), not one- or two-letter tokens."""
    return {w for w in words(text) if len(w) > 2 and w not in ALL_STOP_WORDS}


def copy_measures(question: str, quote: str) -> tuple[float, int]:
    """(share of the question's content words found in the quote, longest run of words both share)."""
    q_content = content_words(question)
    overlap = len(q_content & content_words(quote)) / len(q_content) if q_content else 0.0
    return overlap, longest_common_run(words(question), words(quote))


def longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest contiguous word sequence found in both (dynamic programming, O(len a * len b))."""
    best, previous = 0, [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def is_deictic(question: str) -> str | None:
    """The deictic phrase in the question, if any ("this document", "the above", "according to the text")."""
    match = _DEICTIC.search(question)
    return match.group(0) if match else None


def check_draft_quote(source_id: str, quote: str, view: PageView,
                      limits: Limits) -> tuple[list[Reason], tuple[str, ...]]:
    """Reasons about the quote, and the pages it occurs on (source page first) when it is on the source page."""
    needle = fold(quote)
    if not needle:
        return [Reason("quote_missing", "the draft has no quote")], ()
    found = [pid for pid, text in view.pages.items() if needle in text]
    if source_id not in found:
        if found:
            return [Reason("quote_on_wrong_page", f"the quote is not on {source_id} but on {', '.join(found)}")], ()
        return [Reason("quote_not_found", f"the quote occurs on no page (not verbatim on {source_id}); the model "
                                          "may have changed or invented it")], ()
    reasons = []
    n_words = len(needle.split())
    if n_words < limits.min_quote_words:
        reasons.append(Reason("quote_too_short", f"the quote has {n_words} words, fewer than --min-quote-words "
                                                 f"{limits.min_quote_words}"))
    fits = [pid for pid in found if any(needle in chunk for chunk in view.chunks.get(pid, ()))]
    if source_id not in fits:
        reasons.append(Reason("quote_cut_by_chunk", f"the quote is cut by a chunk boundary on {source_id}; no "
                                                    "retrieved chunk could hold it"))
    # Other pages holding the same words answer the question too: they become evidence (if a chunk holds it).
    evidence = (source_id, *(pid for pid in fits if pid != source_id))
    return reasons, evidence


def check_facts(facts: Sequence[str], quote: str, question: str, limits: Limits) -> list[Reason]:
    """Every fact is in the quote (the facts metric's matcher), short, and not given away by the question."""
    if not facts:
        return [Reason("no_facts", "the draft names no fact a correct answer must contain")]
    reasons = []
    for fact in facts:
        if not fold(fact):
            reasons.append(Reason("fact_empty", "an empty fact"))
            continue
        if not fact_found(quote, [fact]):
            reasons.append(Reason("fact_not_in_quote", f"fact {fact!r} does not occur in the quote"))
        if len(fold(fact).split()) > limits.max_fact_words:
            reasons.append(Reason("fact_too_long", f"fact {fact!r} has more than {limits.max_fact_words} words; "
                                                   "a fact is a short string an answer must contain"))
        if fact_found(question, [fact]):
            reasons.append(Reason("fact_in_question", f"fact {fact!r} occurs in the question, so any answer that "
                                                      "repeats the question would contain it"))
    return reasons


def check_question(question: str, quote: str, page_language: str, limits: Limits) \
        -> tuple[list[Reason], list[str], float, int, dict]:
    """Reasons about the question itself, its copy tag, the copy measurements and the languages."""
    reasons: list[Reason] = []
    if not fold(question):
        return [Reason("question_missing", "the draft has no question")], [], 0.0, 0, {}
    overlap, run = copy_measures(question, quote) if quote else (0.0, 0)
    if quote and (run >= limits.copy_ngram or (overlap >= limits.copy_overlap and run >= 3)):
        reasons.append(Reason("question_copies_quote", f"the question is a near copy of its quote: {run} words in a "
                                                       f"row and {overlap:.0%} of its content words are in the quote "
                                                       f"(a copy: {limits.copy_ngram} words in a row, or "
                                                       f"{limits.copy_overlap:.0%} and 3 in a row)"))
    if (phrase := is_deictic(question)) is not None:
        reasons.append(Reason("deictic_question", f"the question says {phrase!r}, which only makes sense to someone "
                                                  "looking at the page"))
    ok, question_language = same_language(question, page_language)
    if not ok:
        reasons.append(Reason("wrong_language", f"the question looks {question_language}, the page "
                                                f"{page_language}"))
    tags = ["lexical" if overlap >= limits.lexical_overlap else "paraphrase"] if quote else []
    return reasons, tags, overlap, run, {"page": page_language, "question": question_language}


def too_long(what: str, text: str, limit: int) -> Reason | None:
    """A `<what>_too_long` reason when `text` has more than `limit` characters, or was cut when it was stored
    (`pdfrag.text.is_clipped`: what is left is not what the model wrote), else None."""
    code = f"{what.split()[-1]}_too_long"
    if is_clipped(text):
        return Reason(code, f"the {what} was cut to {limit:,} characters when it was stored")
    if len(text) > limit:
        return Reason(code, f"the {what} has {len(text):,} characters, more than {limit:,}")
    return None


def length_reasons(question: str, quote: str, facts: Sequence[str], page: str | None) -> list[Reason]:
    """Reasons an answerable draft is too long to be a case, by length alone (cheap, so a runaway reply costs
    nothing more): a question over QUESTION_CHARS, a quote over QUOTE_CHARS or longer than its page's text (it
    cannot be on it), a fact over TERM_CHARS."""
    found = [too_long("question", question, QUESTION_CHARS), too_long("quote", quote, QUOTE_CHARS),
             *(too_long("fact", fact, TERM_CHARS) for fact in facts)]
    reasons = [r for r in found if r is not None]
    if page is not None and len(quote) > len(page) and not any(r.code == "quote_too_long" for r in reasons):
        reasons.append(Reason("quote_too_long", f"the quote has {len(quote):,} characters, more than its page "
                                                f"({len(page):,}): it cannot be on it"))
    return reasons


def check_draft(question: str, quote: str, facts: Sequence[str], source_id: str, view: PageView,
                limits: Limits = Limits()) -> Checked:
    """Every deterministic check of an answerable draft (dedupe, round trip and parametric come later); a draft
    too long to be a case (`length_reasons`) gets those reasons alone."""
    oversize = length_reasons(question, quote, facts, view.pages.get(source_id))
    if oversize:
        return Checked(tuple(oversize), (), (), 0.0, 0, {})
    quote_reasons, evidence = check_draft_quote(source_id, quote, view, limits)
    language = view.languages.get(source_id) or guess(view.pages.get(source_id, ""))
    q_reasons, tags, overlap, run, languages = check_question(question, quote, language, limits)
    reasons = quote_reasons + check_facts(facts, quote, question, limits) + q_reasons
    return Checked(tuple(reasons), tuple(tags), evidence, overlap, run, languages)
