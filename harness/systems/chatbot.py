"""The bundled chatbot as a system: pages -> chunks -> nomic embeddings -> qwen3 answers with quotes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chatbot import __version__
from chatbot.answer import Answer
from chatbot.bot import Chatbot, open_chatbot

from ..records import Citation, Passage, SystemAnswer
from .base import SystemContext

NAME = "pdf-rag-eval chatbot over Ollama"


@dataclass
class ChatbotSystem:
    bot: Chatbot
    settings: Any

    @classmethod
    def open(cls, ctx: SystemContext) -> ChatbotSystem:
        s, progress = ctx.settings, ctx.progress
        bot = open_chatbot(docs=s.docs, documents=ctx.documents, client_settings=s.client(), chunking=s.chunking(),
                           embedding=s.embedding(), settings=s.answering(), cache_dir=s.cache_dir,
                           progress=(lambda d, t: progress("embedding", d, t)) if progress else None)
        return cls(bot, s)

    @property
    def chunk_count(self) -> int:
        return len(self.bot.index.chunks)

    def describe(self) -> dict[str, Any]:
        return {"name": "chatbot", "system": NAME, "version": __version__,
                "settings": self.settings.answering().to_dict() | {"chunking": self.settings.chunking().to_dict()},
                "ollama": self.bot.server.to_dict(), "index": self.bot.index.manifest,
                "prompt_template": {"source": self.bot.template.source, "sha256": self.bot.template.sha256},
                "warnings": list(self.bot.warnings)}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        return from_chatbot(self.bot.ask(question))


def from_chatbot(a: Answer) -> SystemAnswer:
    """The chatbot's answer record as the harness reads it; the harness re-validates every citation."""
    return SystemAnswer(
        answer=a.model_answer, abstained=a.status != "answered", raw=a.raw, usage=dict(a.usage),
        retrieved=tuple(Passage(source_id=h.chunk.source_id, text=h.chunk.text, rank=h.rank, score=h.score)
                        for h in a.hits),
        citations=tuple(Citation(source_id=c.source_id, quote=c.quote) for c in a.citations),
        malformed="; ".join(a.reasons) or "malformed reply" if a.status == "malformed_output" else None,
        error=a.error if a.status == "error" else None,
        details={"shown": a.text, "thinking_chars": a.thinking_chars, "done_reason": a.done_reason,
                 "reasons": list(a.reasons)})
