"""Retrievers over one collection's chunks: dense (nomic through Ollama), bm25 (bm25s) and hybrid.

Hybrid is reciprocal-rank fusion (Cormack et al., 2009): each chunk scores the sum over the two rankings of
1 / (RRF_K + rank), over the top `depth` of each ranking; ties keep chunk order. Scores on hits are each
retriever's own (cosine, BM25 or the fused sum), so compare ranks, not scores, across retrievers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pdfrag.chunking import Chunk
from pdfrag.lexical import LexicalIndex

from .index import Hit

RETRIEVERS = ("dense", "bm25", "hybrid")
RRF_K = 60  # the constant of the original paper; it damps the weight of the very first ranks
FUSION_DEPTH = 50  # how deep each ranking is read before fusing


class Retriever(Protocol):
    def retrieve(self, question: str, k: int) -> list[Hit]: ...


class LexicalRetriever:
    """BM25 over chunk texts; the score is BM25's, not a cosine."""

    def __init__(self, chunks: Sequence[Chunk]):
        self.chunks = list(chunks)
        self._index = LexicalIndex([c.text for c in self.chunks])

    def retrieve(self, question: str, k: int) -> list[Hit]:
        return [Hit(rank, score, self.chunks[i])
                for rank, (i, score) in enumerate(self._index.search(question, k), start=1)]


class HybridRetriever:
    """Reciprocal-rank fusion of a dense and a lexical ranking of the same chunks."""

    def __init__(self, dense: Retriever, lexical: LexicalRetriever, *, depth: int = FUSION_DEPTH):
        self.dense, self.lexical, self.depth = dense, lexical, depth
        self._order = {c.source_id: i for i, c in enumerate(lexical.chunks)}

    def retrieve(self, question: str, k: int) -> list[Hit]:
        depth = max(k, self.depth)
        fused: dict[str, float] = {}
        chunks: dict[str, Chunk] = {}
        for ranking in (self.dense.retrieve(question, depth), self.lexical.retrieve(question, depth)):
            for hit in ranking:
                sid = hit.chunk.source_id
                fused[sid] = fused.get(sid, 0.0) + 1.0 / (RRF_K + hit.rank)
                chunks[sid] = hit.chunk
        best = sorted(fused, key=lambda sid: (-fused[sid], self._order.get(sid, len(self._order))))[:k]
        return [Hit(rank, fused[sid], chunks[sid]) for rank, sid in enumerate(best, start=1)]


def choose(kind: str, dense: Retriever, chunks: Sequence[Chunk]) -> Retriever:
    """The retriever named `kind` (one of RETRIEVERS) over `chunks`."""
    if kind == "dense":
        return dense
    if kind == "bm25":
        return LexicalRetriever(chunks)
    if kind == "hybrid":
        return HybridRetriever(dense, LexicalRetriever(chunks))
    raise ValueError(f"unknown retriever {kind!r}; choose one of {', '.join(RETRIEVERS)}")
