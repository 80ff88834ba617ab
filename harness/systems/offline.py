"""The no-model baseline as a system: BM25 retrieval and an extractive answerer (see harness/offline.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chatbot import __version__
from chatbot.answer import PromptTemplate, answer
from chatbot.chunking import chunk_pages

from ..offline import SYSTEM_NAME, ExtractiveGenerator, LexicalRetriever
from ..records import SystemAnswer
from .interface import SystemContext, from_chatbot


@dataclass
class OfflineSystem:
    retriever: LexicalRetriever
    generator: ExtractiveGenerator
    settings: Any
    template: PromptTemplate

    @classmethod
    def open(cls, ctx: SystemContext) -> OfflineSystem:
        s = ctx.settings
        chunks = chunk_pages([p for d in ctx.documents for p in d.pages], s.chunking())
        return cls(LexicalRetriever(chunks), ExtractiveGenerator(s.abstain_below), s,
                   PromptTemplate.load(s.answering().prompt_path))

    @property
    def chunk_count(self) -> int:
        return len(self.retriever.chunks)

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {"name": "offline", "system": SYSTEM_NAME, "version": __version__, "retrieval": "bm25s (lexical)",
                "model_server": None, "settings": {"top_k": s.top_k, "abstain_below": s.abstain_below,
                                                   "chunking": s.chunking().to_dict()}}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        return from_chatbot(answer(question, self.retriever, self.generator, self.settings.answering(),
                                   self.template))
