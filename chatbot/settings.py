"""The settings the bot is built from, declared by the bot: one flat record by the names `rag-chat` and `rag-eval`
use for them (flags, config keys, a run manifest's `settings`), with its defaults and the builders of the bot's
own records (chunking, embedding, answering).

A harness that evaluates the bot carries these values among its run settings and hands them over with `of`; the
bot's records check them (an `InputError` names the setting and what it must be)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from pdfrag.chunking import ChunkSettings
from pdfrag.errors import InputError

from .answer import AnswerSettings
from .index import EmbedSettings

__all__ = ["BotSettings"]

_ANSWER, _EMBED = AnswerSettings(), EmbedSettings()
_THINK = {"auto": None, "on": True, "off": False}


@dataclass(frozen=True)
class BotSettings:
    """What decides the bot's index and answers. `prompt`: a template file (None: the bundled one); `think`:
    auto (on when the model reports the capability), on or off; `num_predict` None: decided from the server."""

    top_k: int = _ANSWER.top_k
    retriever: str = _ANSWER.retriever
    chunk_size: int = ChunkSettings.size_chars
    chunk_overlap: int = ChunkSettings.overlap_chars
    prompt: str | None = _ANSWER.prompt_path
    chat_model: str = _ANSWER.chat_model
    embed_model: str = _EMBED.model
    doc_prefix: str | None = _EMBED.doc_prefix
    query_prefix: str | None = _EMBED.query_prefix
    batch_size: int = _EMBED.batch_size
    num_ctx: int = _ANSWER.num_ctx
    num_predict: int | None = _ANSWER.num_predict
    seed: int = _ANSWER.seed
    temperature: float = _ANSWER.temperature
    think: str = "auto"
    min_quote_words: int = _ANSWER.min_quote_words
    max_reply_chars: int = _ANSWER.max_reply_chars

    def __post_init__(self) -> None:
        if self.think not in _THINK:
            raise InputError(f"think must be auto, on or off, got {self.think!r}")
        self.chunking(), self.embedding(), self.answering()  # their own checks

    @classmethod
    def of(cls, settings: Any) -> BotSettings:
        """The bot's settings among `settings` (any object with these attributes, such as a harness's run
        settings or parsed flags)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})

    def chunking(self) -> ChunkSettings:
        return ChunkSettings(self.chunk_size, self.chunk_overlap)

    def embedding(self) -> EmbedSettings:
        return EmbedSettings(self.embed_model, self.doc_prefix, self.query_prefix, self.batch_size)

    def answering(self) -> AnswerSettings:
        return AnswerSettings(top_k=self.top_k, chat_model=self.chat_model, prompt_path=self.prompt,
                              temperature=self.temperature, seed=self.seed, num_ctx=self.num_ctx,
                              num_predict=self.num_predict, think=_THINK[self.think],
                              min_quote_words=self.min_quote_words, max_reply_chars=self.max_reply_chars,
                              retriever=self.retriever)
