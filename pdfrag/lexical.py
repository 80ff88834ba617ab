"""A lexical (BM25) retriever over plain texts, built on `bm25s`, with deterministic ties.

Used by the chatbot's bm25 and hybrid retrievers, the offline baseline, offline scoring and drafting.
Texts are tokenised with the project's `normalize()`, lower-cased, and split by a simple word pattern; no
stemming and no stop words, so what matches can be explained by reading the two texts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .text import normalize

if TYPE_CHECKING:
    import bm25s

_WORD = re.compile(r"\w+")

__all__ = ["LexicalIndex", "tokenize"]


def tokenize(text: str) -> list[str]:
    """Return the lower-cased word tokens of `text` after `normalize()`."""
    return _WORD.findall(normalize(text).lower())


class LexicalIndex:
    """A BM25 index (bm25s, Lucene variant, k1=1.5, b=0.75) over `texts`, addressed by position."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._size = len(texts)
        tokens = [tokenize(text) for text in texts]
        self._bm25: bm25s.BM25 | None = None
        # bm25s cannot build a vocabulary from no tokens at all; every score is then 0.
        if any(tokens):
            import bm25s  # on first use: with numpy, a tenth of a second of every `rag-eval score` start

            self._bm25 = bm25s.BM25()
            self._bm25.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return self._size

    def scores(self, query: str) -> list[float]:
        """Return the BM25 score of every text for `query`, in text order (0.0 when nothing matches)."""
        if self._bm25 is None:
            return [0.0] * self._size
        known = [t for t in tokenize(query) if t in self._bm25.vocab_dict]
        if not known:
            return [0.0] * self._size
        import numpy as np

        raw = np.asarray(self._bm25.get_scores(known), dtype=np.float64)
        return [float(s) for s in raw]

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Return up to `k` (position, score) pairs, best first; equal scores keep text order.

        Texts that share no word with the query still fill the list (score 0.0), as a top-k retriever would.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        scores = self.scores(query)
        order = sorted(range(self._size), key=lambda i: (-scores[i], i))
        return [(i, scores[i]) for i in order[:k]]

