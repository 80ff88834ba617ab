"""The bundled chatbot's call plan: what its cells will ask the model servers for, counted before anything runs
(`CountsCalls`, for `rag-eval run --dry-run` and `rag-eval sweep --dry-run`), and where its caches are.

Nothing is generated or loaded: each server is asked for its model list and model details (digests and
capabilities decide the cache keys), and one chunk to embed, of median length, is embedded (and not kept) to time
it. Embedding texts are every cell's chunk texts (doc prefix) and questions (query prefix; none for `bm25`), keyed
as the vector cache keys them. A chat call's key needs its prompt, which needs the retrieved passages: a cell whose
chunk and question vectors are all cached is retrieved locally and its answer keys counted exactly (distinct across
cells, repeat index included); any other cell's chats count as needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.answer import answer_template, render_prompt
from chatbot.answer_cache import CachingGenerator
from chatbot.bot import ServerGenerator
from chatbot.index import EmbeddingCache, Hit, Index, cache_root
from chatbot.retrievers import choose
from chatbot.settings import BotSettings
from pdfrag.backends import connect
from pdfrag.chunking import Chunk, chunk_pages
from pdfrag.model_server import ModelServer, ServerInfo, preflight
from pdfrag.reply_cache import AnswerCache

from .calls import plan_calls
from .interface import CallCount, CellReader, EmbedTiming

__all__ = ["answer_cache_for", "count_chatbot_calls", "embedding_cache_dir"]


def embedding_cache_dir(cache_dir: str | None) -> Path:
    """Where chunk and question vectors are cached (the same place `open_chatbot` uses)."""
    return cache_root(cache_dir) / "embeddings"


def answer_cache_for(cache_dir: str | None) -> AnswerCache:
    """The answer cache under the run's cache directory: `<--cache-dir>/answers`, else the default one."""
    return AnswerCache.default(cache_dir)


def count_chatbot_calls(cells: Sequence[tuple[str, Any]], read: CellReader) -> CallCount:
    """The distinct embedding and chat calls of chatbot cells ((label, run settings) pairs), the cached ones, and
    one chunk still to embed timed (see the module docstring)."""
    embed_keys, chat_keys, unknown = [], [], 0
    # one client per (server, chat model, embedding model): the preflight asks it, the cell's generator holds it
    servers: dict[tuple, _Servers] = {}
    vectors: dict[str, EmbeddingCache] = {}
    to_embed: dict[str, tuple[str, ModelServer, str]] = {}  # chunk key -> (text sent, embedding client, model)
    for _, s in cells:
        where_from = (s.client(), s.chat_model, s.embed_model)
        known = servers.get(where_from)
        if known is None:
            servers[where_from] = known = _identify(s)
        client, server, embedder, embed_server = known
        where = embedding_cache_dir(s.cache_dir)
        cache = vectors.setdefault(str(where), EmbeddingCache(where))
        keys, chats, unknown_chats, texts = _cell_calls(s, read, client, server, embed_server, cache)
        to_embed |= {k: (text, embedder, s.embed_model) for k, text in texts.items()}
        embed_keys.append(keys)
        chat_keys.append(chats)
        unknown += unknown_chats
    answers: dict[str, AnswerCache] = {}

    def chat_cached(key: str) -> bool:
        return any(key in a for a in answers.values())

    for _, s in cells:
        if s.answer_cache:
            answers.setdefault(str(s.cache_dir), answer_cache_for(s.cache_dir))
    calls = plan_calls(embed_keys, chat_keys, embed_cached=lambda k: _cached(vectors, k),
                       chat_cached=chat_cached, unknown_chats=unknown)
    needed = [to_embed[k] for k in to_embed if not _cached(vectors, k)]
    return CallCount(calls, _time_one(needed))


def _time_one(needed: list[tuple[str, ModelServer, str]]) -> EmbedTiming | None:
    """The chunk of median length among `needed`, embedded alone and timed (the vector is not kept)."""
    if not needed:
        return None
    text, embedder, model = sorted(needed, key=lambda n: len(n[0]))[len(needed) // 2]
    started = time.perf_counter()
    embedder.embed(model, [text])
    return EmbedTiming(len(needed), time.perf_counter() - started, len(text), model)


def _cached(caches: dict[str, EmbeddingCache], key: str) -> bool:
    return any(c.get(key) is not None for c in caches.values())


_Servers = tuple[ModelServer, ServerInfo, ModelServer, ServerInfo]


def _identify(s: Any) -> _Servers:
    """(chat client, chat server info, embedding client, embedding server info) of a cell's settings; nothing
    is loaded."""
    settings = s.client()
    client = connect(settings)
    if not settings.separate_embeddings:
        server = preflight(client, chat_model=s.chat_model, embed_model=s.embed_model, load=False)
        return client, server, client, server
    server = preflight(client, chat_model=s.chat_model, embed_model=None, load=False)
    embedder = connect(settings.for_embeddings())
    return client, server, embedder, preflight(embedder, chat_model=None, embed_model=s.embed_model, load=False)


def _cell_calls(s: Any, read: CellReader, client: ModelServer, server: ServerInfo, embed_server: ServerInfo,
                cache: EmbeddingCache) -> tuple[list[str], list[str], int, dict[str, str]]:
    """(embedding keys, answer keys, chats of unknown key, {chunk key: text as sent}) of one chatbot cell."""
    documents, questions = read(s)
    built_from = BotSettings.of(s)
    chunks = chunk_pages([p for d in documents for p in d.pages], built_from.chunking())
    embedding, digest = built_from.embedding(), embed_server.models[s.embed_model].digest
    doc_prefix, query_prefix = embedding.prefixes
    chunk_keys = [EmbeddingCache.key(digest, doc_prefix, c.text) for c in chunks]
    texts = {k: doc_prefix + c.text for k, c in zip(chunk_keys, chunks)}
    dense = s.retriever != "bm25"
    query_keys = {q: EmbeddingCache.key(digest, query_prefix, q) for q in questions} if dense else {}
    chats = len(questions) * s.repeat
    wanted = [*chunk_keys, *query_keys.values()]
    found = {k: v for k in wanted if (v := cache.get(k)) is not None}
    if len(found) < len(set(wanted)):  # some vector is not cached: the prompts, hence the answer keys, are unknown
        return wanted, [], chats, texts
    retrieve = _retriever(s.retriever, chunks, np.vstack([found[k] for k in chunk_keys]),
                          lambda q: found[query_keys[q]])
    answering, template = built_from.answering(), answer_template(s.prompt)
    info = server.models[s.chat_model]
    generator = ServerGenerator.of(client, s.chat_model, info)
    answers = answer_cache_for(s.cache_dir)
    hits = {q: retrieve(q, s.top_k) for q in questions}
    prompts = {q: render_prompt(template, q, passages) for q, passages in hits.items()}
    keys = [CachingGenerator(generator, answers, r).key(prompts[q], answering, hits[q])
            for q in questions for r in range(s.repeat)]  # the run's own keys
    return wanted, keys, 0, texts


def _retriever(kind: str, chunks: list[Chunk], matrix: np.ndarray,
               vector: Callable[[str], np.ndarray]) -> Callable[[str, int], list[Hit]]:
    """Retrieval as the cell will do it (`retrievers.choose`), its dense half from cached vectors only."""
    index = Index(chunks, matrix, {"embedding": {}})

    class _Dense:
        def retrieve(self, question: str, k: int) -> list[Hit]:
            return index.search(vector(question), k)

    return choose(kind, _Dense(), chunks).retrieve
