"""The no-model baseline as a system: BM25 retrieval over the same chunks, and an extractive answerer.

It quotes the best-matching sentence of the top passages, and abstains when no sentence scores at least
`abstain_below`. Its replies go through the same validation as a model's, so its rows mean the same things.
It is a baseline to compare against, not a model: its manifest says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from chatbot.answer import AnswerSettings, answer, answer_template
from chatbot.index import Hit
from chatbot.retrievers import LexicalRetriever
from pdfrag import __version__
from pdfrag.asking import PromptTemplate
from pdfrag.chunking import chunk_pages
from pdfrag.lexical import LexicalIndex, tokenize
from pdfrag.model_server import ChatReply
from pdfrag.text import split_sentences

from ..records import SystemAnswer
from .chatbot import bot_settings, from_chatbot
from .interface import SystemContext
from .traits import OFFLINE, declares

__all__ = ["ExtractiveGenerator", "LexicalRetriever", "OfflineSystem", "SYSTEM_NAME"]

SYSTEM_NAME = "offline extractive baseline (BM25 retrieval + best-sentence quote; no language model)"


class ExtractiveGenerator:
    """Answers with the one sentence of the retrieved passages that best matches the question (BM25 over
    their sentences), or abstains when the best score is below the threshold. It ignores the prompt."""

    model = "extractive-baseline"
    digest = ""

    def __init__(self, abstain_below: float):
        self.abstain_below = abstain_below

    def generate(self, prompt: str, settings: AnswerSettings, question: str, hits: list[Hit]) -> ChatReply:
        sentences = [(h.chunk.source_id, s) for h in hits for s in split_sentences(h.chunk.text)]
        reply: dict = {"answer": "", "citations": []}
        if sentences and tokenize(question):
            (best, score), = LexicalIndex([s for _, s in sentences]).search(question, 1)
            if score >= self.abstain_below:
                sid, sentence = sentences[best]
                reply = {"answer": sentence, "citations": [{"source_id": sid, "quote": sentence}]}
        content = json.dumps(reply)
        return ChatReply(content, "", "stop", None, None, None, None, None, None)


@dataclass
@declares(OFFLINE)
class OfflineSystem:
    """BM25 over our chunks and the extractive answerer: no model server, no call to time."""

    retriever: LexicalRetriever
    generator: ExtractiveGenerator
    settings: Any
    template: PromptTemplate
    prompt_template = staticmethod(answer_template)  # the chatbot's: it answers with the same prompt

    @classmethod
    def open(cls, ctx: SystemContext) -> OfflineSystem:
        s, built_from = ctx.settings, bot_settings(ctx.settings)
        chunks = chunk_pages([p for d in ctx.documents for p in d.pages], built_from.chunking())
        return cls(LexicalRetriever(chunks), ExtractiveGenerator(s.abstain_below), s,
                   answer_template(built_from.prompt))

    @property
    def chunk_count(self) -> int:
        return len(self.retriever.chunks)

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {"name": "offline", "system": SYSTEM_NAME, "version": __version__, "retrieval": "bm25s (lexical)",
                "model_server": None, "settings": {"retriever": s.retriever, "top_k": s.top_k,
                                                   "abstain_below": s.abstain_below,
                                                   "chunking": bot_settings(s).chunking().to_dict()}}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        return from_chatbot(answer(question, self.retriever, self.generator, bot_settings(self.settings).answering(),
                                   self.template))
