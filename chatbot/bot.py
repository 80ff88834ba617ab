"""Assembling the chatbot: preflight, index (built or loaded), retriever and generator over a model server."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pdfrag.asking import PromptTemplate, count_tokens
from pdfrag.backends import connect
from pdfrag.chunking import ChunkSettings
from pdfrag.errors import InputError
from pdfrag.model_server import (
    ChatReply,
    ClientSettings,
    ModelInfo,
    ModelServer,
    ServerInfo,
    load_chat_model,
    preflight,
    server_window,
)
from pdfrag.page_cache import PageCache
from pdfrag.pdfs import Document, duplicate_warnings, read_documents

from .answer import Answer, AnswerSettings, Generator, answer, answer_schema, answer_template
from .index import EmbeddingCache, EmbedSettings, Hit, Index, Progress, build_index, cache_root, embed_query
from .question_batches import QuestionBatches
from .retrievers import Retriever, choose


class ServerRetriever:
    """Embeds the question with the query prefix (on the embedding server) and searches the index. After
    `embed_in_batches(questions)`, those questions are embedded `batch_size` at a time as they are first needed."""

    def __init__(self, client: ModelServer, index: Index, embedding: EmbedSettings):
        self.client, self.index, self.embedding = client, index, embedding
        self.batches: QuestionBatches | None = None

    @property
    def width(self) -> int | None:
        return self.index.vectors.shape[1] if self.index.vectors.ndim == 2 else None

    def embed_in_batches(self, questions: Sequence[str]) -> QuestionBatches:
        """Embed `questions` in batches from now on (each question's vector is the one its batch gave)."""
        prefix, width = self.embedding.prefixes[1], self.width
        self.batches = QuestionBatches(
            lambda batch: self.client.embed(self.embedding.model, [prefix + q for q in batch],
                                            batch_size=self.embedding.batch_size, dim=width),
            questions, self.embedding.batch_size)
        return self.batches

    def retrieve(self, question: str, k: int) -> list[Hit]:
        vector = self.batches.vector(question) if self.batches is not None else None
        if vector is None:
            vector = embed_query(self.client, self.embedding, question, dim=self.width)
        return self.index.search(vector, k)


class ServerGenerator:
    """Asks the chat model with the answer schema as the structured-output format. `server_window` is the
    context the server decides (OpenAI-compatible servers), None where `num_ctx` is sent (Ollama)."""

    def __init__(self, client: ModelServer, model: str, digest: str, capabilities: tuple[str, ...], *,
                 server_window: int | None = None):
        self.client, self.model, self.digest, self.capabilities = client, model, digest, capabilities
        self.server_window = server_window

    @classmethod
    def of(cls, client: ModelServer, model: str, info: ModelInfo) -> ServerGenerator:
        """The generator of `model` as the preflight found it on `client`'s server."""
        return cls(client, model, info.digest, info.capabilities, server_window=server_window(client, info))

    def with_client(self, client: ModelServer) -> ServerGenerator:
        """The same model and settings through another server of the pool."""
        return ServerGenerator(client, self.model, self.digest, self.capabilities,
                               server_window=self.server_window)

    def think_value(self, settings: AnswerSettings) -> bool | None:
        # Thinking models think whatever we say on current servers; asking for it keeps the reasoning in
        # message.thinking instead of leaking into content on v0.9-v0.12.3. Models without it get no field.
        if settings.think is not None:
            return settings.think
        return True if "thinking" in self.capabilities else None

    def thinks(self, settings: AnswerSettings) -> bool:
        """Whether the reply comes in two phases (thinking, then the answer): the context budget depends on it."""
        return bool(self.think_value(settings))

    def count_tokens(self, prompt: str) -> int | None:
        """The prompt's tokens as the server counts them (llama.cpp), else None."""
        return count_tokens(self.client, self.model, prompt)

    def generate(self, prompt: str, settings: AnswerSettings, question: str, hits: list[Hit]) -> ChatReply:
        return self.client.chat(self.model, [{"role": "user", "content": prompt}], format=answer_schema(hits),
                                options=settings.options(), think=self.think_value(settings))


@dataclass
class Chatbot:
    """A ready answerer: `bot.ask(question)` runs the real answer path."""

    client: ModelServer
    server: ServerInfo
    index: Index
    documents: list[Document]
    retriever: Retriever
    generator: Generator  # a ServerGenerator, or a CachingGenerator over one
    settings: AnswerSettings
    template: PromptTemplate
    warnings: tuple[str, ...] = ()
    embed_client: ModelServer | None = None  # None: the chat server embeds too
    embed_server: ServerInfo | None = None

    def ask(self, question: str) -> Answer:
        return answer(question, self.retriever, self.generator, self.settings, self.template)


def open_chatbot(*, docs: str | Path | None = None, index_dir: str | Path | None = None,
                 client_settings: ClientSettings = ClientSettings(), chunking: ChunkSettings = ChunkSettings(),
                 embedding: EmbedSettings = EmbedSettings(), settings: AnswerSettings = AnswerSettings(),
                 cache_dir: str | Path | None = None, progress: Progress | None = None,
                 documents: list[Document] | None = None, status: Callable[[str], None] | None = None) -> Chatbot:
    """Preflight the server, then build a fresh index from `docs` (cache-backed) or load one from `index_dir`.
    `documents` may carry `docs` already read, so a caller that checked labels against them reads once.
    `status` hears slow steps before they start ("loading qwen3:4b…"); the caller decides how to show them."""
    if (docs is None) == (index_dir is None):
        raise InputError("give either a documents folder (--docs) or a saved index (--index), not both")
    template = answer_template(settings.prompt_path)
    pages = PageCache.at(cache_dir)
    if documents is None:
        documents = read_documents(docs, cache=pages) if docs is not None else []
    saved = Index.load(index_dir) if index_dir is not None else None
    if saved is not None:
        embedding = _saved_embedding(saved)
    client, server, embedder, embed_server = _preflight(client_settings, settings.chat_model, embedding.model,
                                                        status)
    digest = embed_server.models[embedding.model].digest
    if saved is None:
        cache = EmbeddingCache(cache_root(cache_dir) / "embeddings")
        index = build_index(documents, embedder, chunking=chunking, embedding=embedding, digest=digest,
                            cache=cache, progress=progress)
    elif saved.manifest["embedding"]["digest"] != digest:
        raise InputError(f"{index_dir}: built with {embedding.model} digest "
                         f"{saved.manifest['embedding']['digest'][:12]}, but the server's copy has digest "
                         f"{digest[:12]}; rebuild the index with `rag-chat index`")
    else:
        index = saved
    chat_info = server.models[settings.chat_model]
    generator = ServerGenerator.of(client, settings.chat_model, chat_info)
    settings = settings.resolved(generator.server_window, thinks=generator.thinks(settings))  # num_predict decided
    warnings = (_version_warnings(server, generator.think_value(settings))
                + _think_warnings(settings.chat_model, chat_info.capabilities, settings.think)
                + duplicate_warnings(documents) + ((pages.problem,) if pages.problem else ()))
    retriever = choose(settings.retriever, ServerRetriever(embedder, index, embedding), index.chunks)
    return Chatbot(client, server, index, documents, retriever, generator, settings, template, warnings,
                   embed_client=None if embedder is client else embedder,
                   embed_server=None if embed_server is server else embed_server)


def _preflight(settings: ClientSettings, chat_model: str, embed_model: str, status: Callable[[str], None] | None
               ) -> tuple[ModelServer, ServerInfo, ModelServer, ServerInfo]:
    """(chat client, its server info, embedding client, its server info): one server for both unless
    `settings` names another for embeddings (vLLM and llama.cpp serve one model per server)."""
    client = connect(settings)
    if not settings.separate_embeddings:
        server = preflight(client, chat_model=chat_model, embed_model=embed_model, status=status)
        return client, server, client, server
    embedder = connect(settings.for_embeddings())
    # the chat server first: a wrong port or model there is said at once, not after a busy embedding server
    server = preflight(client, chat_model=chat_model, embed_model=None, status=status, load=False)
    embed_server = preflight(embedder, chat_model=None, embed_model=embed_model, status=status)
    return client, load_chat_model(client, server, chat_model, status), embedder, embed_server


def _version_warnings(server: ServerInfo, think: bool | None) -> tuple[str, ...]:
    """Known Ollama behaviour that can spoil answers (before 0.12.4, a thinking model with a JSON schema could
    return broken JSON or leak <think> text). `0.0.0` is what a source build reports: its age is unknown, so it
    gets no warning."""
    if server.backend != "ollama":
        return ()
    version = server.version
    numbers = tuple(int(n) for n in re.findall(r"\d+", version.split("-")[0])[:3])
    if numbers and numbers != (0, 0, 0) and numbers < (0, 12, 4) and think is not False:
        return (f"Ollama {version} is older than 0.12.4: with a thinking model and a JSON schema it can return "
                "broken JSON or leak <think> text into the answer; upgrade Ollama for reliable results",)
    return ()


def _think_warnings(model: str, capabilities: tuple[str, ...], think: bool | None) -> tuple[str, ...]:
    """`--think off` is ignored by hybrid thinking models such as qwen3:4b (they think anyway). The rule, kept
    simple on purpose: a model that reports the `thinking` capability and has no "instruct" in its name."""
    if think is False and "thinking" in capabilities and "instruct" not in model.lower():
        warning = (f"--think off may be ignored: {model} reports the thinking capability, and hybrid thinking "
                   "models such as qwen3:4b think anyway; for a non-thinking baseline use an instruct model such as "
                   "qwen3:4b-instruct-2507-q4_K_M")
        return (warning,)
    return ()


def _saved_embedding(index: Index) -> EmbedSettings:
    saved = index.manifest["embedding"]
    return EmbedSettings(saved["model"], saved["doc_prefix"], saved["query_prefix"], saved["batch_size"])
