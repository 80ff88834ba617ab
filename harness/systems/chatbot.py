"""The bundled chatbot as a system: pages -> chunks -> nomic embeddings -> qwen3 answers with quotes.

With several servers (`hosts`), every server is preflighted first and a different model build on any of them is
refused before anything is loaded or embedded; the index is built through the first server, and each case is
then answered by whichever server has a free worker slot (`answer_with(..., client=)`), its question embedded and
its answer generated there. With `answer_cache`, chat replies come from the content-addressed answer cache when it
holds them (the repeat index is part of the key) and question vectors from the embedding cache, so a sweep never
sends the same request twice.

Within one process, systems share per-server state so that a sweep may answer two cells at once: a server's
`workers` slots are one gate for every system using it (never more requests in flight than it was given), index
builds take turns (a chunk text shared by two cells is embedded once), and one lock per question vector (here) and per
answer key (`CachingGenerator`) makes the second asker wait for the first one's cached result instead of sending
the same request.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from chatbot.answer import Answer, Generator, answer, answer_template
from chatbot.answer_cache import CachingGenerator
from chatbot.bot import Chatbot, ServerGenerator, ServerRetriever, open_chatbot
from chatbot.index import EmbeddingCache, EmbedSettings, Hit, Index, embed_query
from chatbot.retrievers import HybridRetriever, LexicalRetriever, Retriever
from chatbot.settings import BotSettings
from pdfrag import __version__
from pdfrag.asking import KeyLocks
from pdfrag.backends import connect, resolve_address
from pdfrag.hosts import HostPool, PoolInfo
from pdfrag.model_server import ClientSettings, ModelServer
from pdfrag.reply_cache import AnswerCache

from ..records import Citation, Passage, SystemAnswer
from .chatbot_calls import answer_cache_for, count_chatbot_calls, embedding_cache_dir
from .interface import System, SystemContext
from .traits import CHATBOT, declares

NAME = "pdf-rag-eval chatbot over Ollama"  # the system's name in manifests; `_name` says which API it spoke


@runtime_checkable
class PooledSystem(System, Protocol):
    """A system that can answer through any of several model servers (the bundled chatbot with several
    `--host`): the harness spreads cases over `pool` and asks `answer_with` through the server it picked."""

    pool: HostPool

    def answer_with(self, question: str, *, case_id: str, repeat: int, client: ModelServer) -> SystemAnswer: ...


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


def bot_settings(settings: Any) -> BotSettings:
    """The bot's settings among a run's (`harness.settings.RunSettings` carries them by the flat names the bot
    declares, `chatbot.settings.BotSettings`); an InputError names a value the bot refuses."""
    return BotSettings.of(settings)


class CachedQueryRetriever:
    """Dense retrieval whose question vectors come from the embedding cache (keyed by model digest, query prefix
    and text, like chunk vectors) and are embedded at most once per process, even when repeats of one question
    run at the same time."""

    def __init__(self, client: ModelServer, index: Index, embedding: EmbedSettings, cache: EmbeddingCache):
        self.client, self.index, self.embedding, self.cache = client, index, embedding, cache
        self.digest = index.manifest["embedding"]["digest"]

    def retrieve(self, question: str, k: int) -> list[Hit]:
        width = self.index.vectors.shape[1] if self.index.vectors.ndim == 2 else None
        key = EmbeddingCache.key(self.digest, self.embedding.prefixes[1], question)
        with _QUERIES.lock_for(key):
            vector = self.cache.get(key)
            if vector is None or (width is not None and len(vector) != width):
                vector = embed_query(self.client, self.embedding, question, dim=width)
                self.cache.put(key, np.asarray(vector, dtype=np.float32))
        return self.index.search(vector, k)


_QUERIES = KeyLocks()  # per process: shared by every system (cells of a sweep)
_OPENING = threading.Lock()  # index builds take turns
_GATES: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_GATES_GUARD = threading.Lock()


_CLIENTS: dict[ClientSettings, ModelServer] = {}


def _client(host: str | None, settings: ClientSettings) -> ModelServer:
    """One client per server and client settings in this process: making one costs ~40 ms (its TLS context),
    which a sweep would otherwise pay per cell and server."""
    key = dataclasses.replace(settings, host=resolve_address(host, settings.backend))
    with _GATES_GUARD:
        if key not in _CLIENTS:
            _CLIENTS[key] = connect(key)
        return _CLIENTS[key]


def _gate(host: str, slots: int) -> threading.BoundedSemaphore:
    """The one gate of `slots` requests in flight to `host`, shared by every system in this process."""
    with _GATES_GUARD:
        return _GATES.setdefault((host.rstrip("/"), slots), threading.BoundedSemaphore(slots))


def _absolute(path: str | None) -> str | None:
    """A path as a manifest records it (as `harness.settings.RunSettings.recorded` does)."""
    return os.path.abspath(path) if path else path


@dataclass
@declares(CHATBOT)
class ChatbotSystem:
    """The bundled chatbot: our chunks, our prompt template, answers through a pool of model servers (whose
    clients keep their own deadlines)."""

    bot: Chatbot
    settings: Any
    pool: HostPool  # the servers that answer cases, each with `workers` slots
    pool_info: PoolInfo | None = None  # set when several servers were preflighted together
    answers: AnswerCache | None = None
    _lanes: dict[str, tuple[Retriever, ServerGenerator]] = field(default_factory=dict)
    count_calls = staticmethod(count_chatbot_calls)  # CountsCalls: its call plan, before anything is built
    prompt_template = staticmethod(answer_template)  # the template it answers with (`--prompt`, else its own)

    @classmethod
    def open(cls, ctx: SystemContext) -> ChatbotSystem:
        s, progress = ctx.settings, ctx.progress
        pool, info = None, None
        servers = s.servers()
        if len(servers) > 1:  # refuse different builds on any server before loading or embedding anything
            pool = HostPool([_client(h, s.client()) for h in servers], slots=s.workers)
            embeds_here = not s.client().separate_embeddings  # else the embedding server is preflighted on its own
            info = pool.preflight(chat_model=s.chat_model, embed_model=s.embed_model if embeds_here else None,
                                  status=ctx.status)
        built_from = bot_settings(s)
        with _OPENING:
            bot = open_chatbot(docs=s.docs, documents=ctx.documents, client_settings=s.client(),
                               chunking=built_from.chunking(), embedding=built_from.embedding(),
                               settings=built_from.answering(), cache_dir=s.cache_dir,
                               progress=(lambda d, t: progress("embedding", d, t)) if progress else None,
                               status=ctx.status)
        if pool is None:
            pool = HostPool([bot.client], slots=s.workers)
        answers = answer_cache_for(s.cache_dir) if getattr(s, "answer_cache", False) else None
        if answers is not None:
            answers.check_writable()  # a read-only cache is a warning (describe), before any case; never an error row
        system = cls(bot, s, pool, info, answers)
        system._bind_lanes()
        return system

    def _bind_lanes(self) -> None:
        """One retriever and generator per server: same index, models and settings, that server's client. With a
        separate embedding server, every lane embeds its questions there."""
        bot, s = self.bot, self.settings
        embedding = bot_settings(s).embedding()
        lexical = _lexical_of(bot.retriever)
        vectors = EmbeddingCache(embedding_cache_dir(s.cache_dir))
        for client in self.pool.clients:
            embedder = bot.embed_client or client
            dense: Retriever = (CachedQueryRetriever(embedder, bot.index, embedding, vectors)
                                if self.answers else ServerRetriever(embedder, bot.index, embedding))
            retriever = (dense if lexical is None else lexical if s.retriever == "bm25"
                         else HybridRetriever(dense, lexical))
            gen = bot.generator
            assert isinstance(gen, ServerGenerator)  # open_chatbot always builds one
            self._lanes[client.host] = (retriever, gen.with_client(client))

    @property
    def chunk_count(self) -> int:
        return len(self.bot.index.chunks)

    def describe(self) -> dict[str, Any]:
        out = {"name": "chatbot", "system": _name(self.bot.server.backend), "version": __version__,
               "settings": self.bot.settings.to_dict() | {"chunking": bot_settings(self.settings).chunking().to_dict(),
                                                          "prompt_path": _absolute(self.bot.settings.prompt_path)},
               _server_key(self.bot.server.backend): self.bot.server.to_dict(), "index": self.bot.index.manifest,
               "prompt_template": {"source": self.bot.template.source, "sha256": self.bot.template.sha256},
               "warnings": list(self.bot.warnings) + list(self.pool_info.warnings if self.pool_info else ())
               + ([self.answers.problem] if self.answers is not None and self.answers.problem else [])}
        if self.bot.embed_server is not None:
            out["embed_server"] = self.bot.embed_server.to_dict()
        order = getattr(self.bot.embed_client or self.bot.client, "embedding_order", None)
        if order is not None:  # how the vectors were matched to their texts (OpenAI-compatible servers)
            out["embedding_order"] = order
        if self.pool_info is not None:
            out["servers"] = [{"host": h, "slots": n} | info.to_dict()
                              for h, n, info in zip(self.pool.hosts, self.pool.slots, self.pool_info.servers)]
        if self.answers is not None:
            out["answer_cache"] = str(self.answers.root)
        return out

    def questions_ahead(self, questions: Sequence[str]) -> None:
        """Embed the run's `questions` in batches as the answering reaches them, instead of one request per
        question. Only where every lane embeds on one server without the embedding cache (the cached path keeps
        its one-lock-per-question dedup across the cells of a sweep); a batch that fails leaves its questions to
        be embedded one by one, as without this."""
        dense = [_dense_of(retriever) for retriever, _ in self._lanes.values()]
        lanes = [d for d in dense if isinstance(d, ServerRetriever)]
        if self.answers is not None or not lanes or len(lanes) != len(dense) or len({id(d.client) for d in lanes}) > 1:
            return  # with several embedding servers each embeds the questions it answers, as without batching
        batches = lanes[0].embed_in_batches(questions)
        for lane in lanes[1:]:
            lane.batches = batches

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        return self.answer_with(question, case_id=case_id, repeat=0, client=self.pool.clients[0])

    def answer_with(self, question: str, *, case_id: str, repeat: int, client: ModelServer) -> SystemAnswer:
        """Answer through `client`'s server; with the answer cache, the reply for this repeat index is reused."""
        retriever, ollama = self._lanes[client.host]
        generator: Generator = ollama
        if self.answers is not None:
            generator = CachingGenerator(ollama, self.answers, repeat)
        with _gate(client.host, self.settings.workers):
            return from_chatbot(answer(question, retriever, generator, self.bot.settings, self.bot.template))


def _name(backend: str) -> str:
    return NAME if backend == "ollama" else "pdf-rag-eval chatbot over an OpenAI-compatible server"


def _server_key(backend: str) -> str:
    """The manifest key of the chat server's description: `ollama` as always for Ollama, `model_server` for an
    OpenAI-compatible server (its section says `identity by name only`)."""
    return "ollama" if backend == "ollama" else "model_server"


def _dense_of(retriever: Retriever) -> Retriever | None:
    """The dense retriever of a lane (dense, or the dense half of hybrid); None for bm25."""
    if isinstance(retriever, HybridRetriever):
        return retriever.dense
    return None if isinstance(retriever, LexicalRetriever) else retriever


def _lexical_of(retriever: Retriever) -> LexicalRetriever | None:
    """The bot's BM25 retriever (bm25, or the lexical half of hybrid), shared by every server; None for dense."""
    if isinstance(retriever, LexicalRetriever):
        return retriever
    return retriever.lexical if isinstance(retriever, HybridRetriever) else None
