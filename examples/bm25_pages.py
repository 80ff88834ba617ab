"""A tiny RAG system to show the plug-in contract: BM25 over whole pages, answer = best matching sentence.

    python evaluate_rag.py --system examples.bm25_pages:make_system

It reads the PDFs with pypdf itself (not with the harness), numbers pages from 1, and names passages
`<path relative to --docs>#p<page>`. It is deliberately simple: a baseline, not a model.
"""

from __future__ import annotations

import re
from pathlib import Path

import bm25s
from pypdf import PdfReader

from harness import Citation, Passage, SystemAnswer

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Bm25Pages:
    def __init__(self, docs: str, top_k: int = 3, min_score: float = 1.0):
        root = Path(docs)
        files = [root] if root.is_file() else sorted(root.rglob("*.pdf"))
        base = root.parent if root.is_file() else root
        self.pages = [(f"{f.relative_to(base).as_posix()}#p{n}", page.extract_text() or "")
                      for f in files for n, page in enumerate(PdfReader(f).pages, start=1)]
        self.top_k, self.min_score = top_k, min_score
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize([text for _, text in self.pages], show_progress=False), show_progress=False)

    def describe(self) -> dict:
        return {"name": "bm25-pages example", "version": "1", "settings": {"top_k": self.top_k,
                                                                           "min_score": self.min_score}}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        ids, scores = self.index.retrieve(bm25s.tokenize([question], show_progress=False),
                                          k=min(self.top_k, len(self.pages)), show_progress=False)
        hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0])]
        passages = [Passage(source_id=self.pages[i][0], text=self.pages[i][1], rank=r, score=s)
                    for r, (i, s) in enumerate(hits, start=1)]
        words = set(re.findall(r"\w+", question.lower()))
        best = max(((len(words & set(re.findall(r"\w+", s.lower()))), s, p.source_id)
                    for p in passages[:1] for s in _SENTENCE.split(" ".join(p.text.split()))), default=None)
        if best is None or not hits or hits[0][1] < self.min_score or best[0] < 2:
            return SystemAnswer(answer="", abstained=True, retrieved=tuple(passages))
        return SystemAnswer(answer=best[1], retrieved=tuple(passages),
                            citations=(Citation(source_id=best[2], quote=best[1]),))


def make_system(docs: str = "sample_docs") -> Bm25Pages:
    return Bm25Pages(docs)
