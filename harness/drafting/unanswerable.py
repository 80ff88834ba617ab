"""Unanswerable drafts: a question about an entity or number close to one on a real page but on no page at all.

The model proposes the question and names the term it changed (`original` -> `changed`); the checks here decide.
The distinguishing terms are the words of `changed` that are not words of `original` (stop words aside); each
must appear in the question and on no page of the collection. The question's best BM25 score over every sentence
of the collection must fall below the offline baseline's abstain threshold, so a lexical system would find nothing
to quote either. These drafts stay `pending` until a human accepts them: only a person can tell that no page
answers a question.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pdfrag.lexical import LexicalIndex
from pdfrag.text import fold, split_sentences

from ..records import QUESTION_CHARS, TERM_CHARS
from .language import ALL_STOP_WORDS
from .records import Reason
from .verify import is_deictic, too_long, words

_NUMBER = re.compile(r"^\d")


_SENTENCE_CHARS = 200  # of the best sentence, quoted in a reason


@dataclass(frozen=True)
class Sentences:
    """Every sentence of the collection, indexed once for BM25 (the texts the offline baseline scores), with the
    page each comes from."""

    texts: tuple[str, ...]
    sources: tuple[str, ...]  # page id of each sentence
    index: LexicalIndex

    @classmethod
    def of(cls, chunks: Sequence[tuple[str, str]]) -> Sentences:
        """From (page id, chunk text) pairs."""
        pairs = [(source, s) for source, text in chunks for s in split_sentences(text)]
        texts = tuple(s for _, s in pairs)
        return cls(texts, tuple(source for source, _ in pairs), LexicalIndex(texts))

    def best(self, question: str) -> tuple[float, str, str]:
        """The highest BM25 score of any sentence for `question`, that sentence and its page ("" when none)."""
        if not self.texts:
            return 0.0, "", ""
        (i, score), = self.index.search(question, 1)
        return score, self.texts[i], self.sources[i]


def bm25_check(question: str, sentences: Sentences, abstain_below: float) -> tuple[Reason | None, float]:
    """The question's best BM25 sentence score, and a `bm25_above_threshold` reason naming the score, the
    threshold, the page and the sentence when it reaches the threshold (a lexical system would find a quote)."""
    score, sentence, source = sentences.best(question)
    if score < abstain_below:
        return None, score
    shown = sentence if len(sentence) <= _SENTENCE_CHARS else sentence[:_SENTENCE_CHARS - 3] + "..."
    return Reason("bm25_above_threshold", f"score {score:.2f} >= threshold {abstain_below:g} on {source}: "
                                          f"{shown!r}"), score


def distinguishing_terms(original: str, changed: str) -> list[str]:
    """Words of `changed` that are not words of `original`: numbers always, other words unless stop words."""
    old = set(words(original))
    return [w for w in dict.fromkeys(words(changed))
            if w not in old and (_NUMBER.match(w) or (w not in ALL_STOP_WORDS and len(w) > 1))]


def on_some_page(term: str, pages: Mapping[str, str]) -> str | None:
    """The first page id whose folded text holds `term` as a whole word, else None."""
    pattern = re.compile(rf"(?<!\w){re.escape(fold(term))}(?!\w)")
    return next((pid for pid, text in pages.items() if pattern.search(text)), None)


def check_unanswerable(question: str, original: str, changed: str, source_id: str, pages: Mapping[str, str],
                       sentences: Sentences, abstain_below: float) -> tuple[list[Reason], float]:
    """Reasons an unanswerable draft fails, and its best BM25 sentence score (0 for a draft too long to check: a
    question over QUESTION_CHARS, a term over TERM_CHARS)."""
    oversize = [r for r in (too_long("question", question, QUESTION_CHARS), too_long("original term", original,
                                                                                       TERM_CHARS),
                            too_long("changed term", changed, TERM_CHARS)) if r is not None]
    if oversize:
        return oversize, 0.0
    reasons: list[Reason] = []
    if not fold(question):
        return [Reason("question_missing", "the draft has no question")], 0.0
    if (phrase := is_deictic(question)) is not None:
        reasons.append(Reason("deictic_question", f"the question says {phrase!r}"))
    if original and on_some_page(original, {source_id: pages.get(source_id, "")}) is None:
        reasons.append(Reason("original_not_on_page", f"the term it says it changed, {original!r}, is not on "
                                                      f"{source_id}"))
    terms = distinguishing_terms(original, changed)
    if not terms:
        reasons.append(Reason("no_distinguishing_term", f"{changed!r} adds no word to {original!r}"))
    q_words = set(words(question))
    for term in terms:
        if term not in q_words:
            reasons.append(Reason("changed_term_not_in_question", f"{term!r} is not in the question"))
        elif (page := on_some_page(term, pages)) is not None:
            reasons.append(Reason("changed_term_in_collection", f"{term!r} occurs on {page}, so the documents may "
                                                                "answer it"))
    above, score = bm25_check(question, sentences, abstain_below)
    return reasons + ([above] if above else []), score
