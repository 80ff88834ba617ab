"""The documents as the drafting checks see them, built once: folded pages and chunks, BM25 over chunks and over
sentences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdfrag.chunking import Chunk, ChunkSettings, chunk_pages
from pdfrag.lexical import LexicalIndex
from pdfrag.pdfs import Document
from pdfrag.text import fold

from ..cases import Evidence
from ..metrics.observation import Retrieved, first_rank
from .language import guess
from .unanswerable import Sentences
from .verify import PageView


@dataclass(frozen=True)
class Collection:
    """The documents as edits need them: the page view for the checks, chunks and sentences for BM25."""

    view: PageView
    chunks: tuple[Chunk, ...]
    lexical: LexicalIndex
    sentences: Sentences

    @classmethod
    def of(cls, documents: Sequence[Document], chunking: ChunkSettings) -> Collection:
        pages = [p for d in documents for p in d.pages]
        chunks = tuple(chunk_pages(pages, chunking))
        by_page: dict[str, list[str]] = {}
        for chunk in chunks:
            by_page.setdefault(chunk.page_id, []).append(fold(chunk.text))
        view = PageView({p.source_id: fold(p.text) for p in pages}, by_page,
                        {p.source_id: guess(p.text) for p in pages})
        texts = [c.text for c in chunks]
        return cls(view, chunks, LexicalIndex(texts), Sentences.of([(c.page_id, c.text) for c in chunks]))

    def bm25_rank(self, question: str, quote: str, evidence: Sequence[str]) -> int | None:
        """Rank of the first chunk of an evidence page holding the quote, with the question as BM25 query."""
        ranked = [self.chunks[i] for i, _ in self.lexical.search(question, len(self.chunks))]
        return evidence_rank(ranked, quote, evidence)


def evidence_rank(ranked: Sequence[Chunk], quote: str, evidence: Sequence[str]) -> int | None:
    """Rank (from 1) of the first chunk of an evidence page holding the quote, in chunks ranked best first."""
    retrieved = [Retrieved(rank, c.page_id, c.text) for rank, c in enumerate(ranked, start=1)]
    found = [r for pid in evidence if (r := first_rank(retrieved, Evidence(pid, quote))) is not None]
    return min(found) if found else None
