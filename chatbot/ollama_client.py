"""The only module that talks HTTP to a model server, through the official `ollama` client.

Every failure leaves here as one of our own exceptions (chatbot.errors) with a message that says what to do.
Error text differs between Ollama releases, so replies are classified by status code and a loose substring only.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

import httpx
import numpy as np
import ollama

from .errors import BadReply, InputError, InputTooLong, ModelMissing, OllamaTimeout, ServerBusy, ServerUnreachable

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_CHAT_MODEL = "qwen3:4b"
DEFAULT_EMBED_MODEL = "nomic-embed-text"

# Task prefixes some embedding models need (Ollama never adds them): (document prefix, query prefix).
# Keys are model names without tag. Users override them per run (--doc-prefix / --query-prefix).
EMBED_PREFIXES: dict[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_document: ", "search_query: "),
    "mxbai-embed-large": ("", "Represent this sentence for searching relevant passages: "),
    "snowflake-arctic-embed": ("", "Represent this sentence for searching relevant passages: "),
}

# Connection failures that happen after a request was sent: the server (or a proxy) hung up. Worth a retry.
_DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
T = TypeVar("T")


def resolve_host(flag: str | None = None) -> str:
    """The server address: the flag, then $OLLAMA_HOST, then Ollama's default."""
    return flag or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST


def prefixes_for(model: str) -> tuple[str, str]:
    """(document prefix, query prefix) for an embedding model; empty strings when it needs none."""
    return EMBED_PREFIXES.get(_base_name(model), ("", ""))


def canonical_model(name: str) -> str:
    """`nomic-embed-text` -> `nomic-embed-text:latest`, lower-cased, as the server matches names."""
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _base_name(model: str) -> str:
    return canonical_model(model).rsplit(":", 1)[0]


@dataclass(frozen=True)
class ClientSettings:
    """How to reach the server. Timeouts are per HTTP call, in seconds; retries apply to 503 and dropped links."""

    host: str | None = None
    timeout_s: float = 300.0
    connect_timeout_s: float = 10.0
    retries: int = 3
    backoff_s: float = 1.0

    def __post_init__(self) -> None:
        if not (self.timeout_s > 0 and self.connect_timeout_s > 0):
            raise InputError(f"timeouts must be positive seconds, got {self.timeout_s} and {self.connect_timeout_s}")
        if self.retries < 0 or self.backoff_s < 0:
            raise InputError(f"retries and backoff cannot be negative, got {self.retries} and {self.backoff_s}")


@dataclass(frozen=True)
class ChatReply:
    """What the chat endpoint returned, with Ollama's nanosecond durations converted to milliseconds."""

    content: str
    thinking: str
    done_reason: str | None
    prompt_tokens: int | None
    output_tokens: int | None
    total_ms: float | None
    load_ms: float | None
    prompt_eval_ms: float | None
    eval_ms: float | None
    retries: int = 0


@dataclass(frozen=True)
class ModelInfo:
    name: str
    digest: str
    capabilities: tuple[str, ...] = ()
    context_length: int | None = None
    embedding_length: int | None = None


@dataclass(frozen=True)
class ServerInfo:
    """What the preflight found: recorded in index and run manifests."""

    host: str
    version: str
    models: dict[str, ModelInfo] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "host": self.host,
            "version": self.version,
            "models": {name: vars(info) | {"capabilities": list(info.capabilities)} for name, info in self.models.items()},
        }


class OllamaClient:
    """A thin, retrying wrapper over `ollama.Client` that speaks in our types and exceptions."""

    def __init__(self, settings: ClientSettings = ClientSettings(), *, sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        self.host = resolve_host(settings.host)
        timeout = httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s)
        self._client = ollama.Client(host=self.host, timeout=timeout)
        self._sleep = sleep
        self._lock = threading.Lock()  # --workers share one client
        self.calls = 0  # HTTP calls made, retries included: benchmarks and tests read it

    # -- calls ---------------------------------------------------------------------------------------------
    def version(self) -> str:
        try:
            reply, _ = self._call("GET /api/version", "", lambda: self._client._request_raw("GET", "/api/version"))
        except ModelMissing:  # a 404 here means the path is unknown: some other web server answered
            raise BadReply(f"{self.host} answered but has no /api/version; is it an Ollama server? Check --host "
                           "/ OLLAMA_HOST") from None
        try:
            return str(reply.json()["version"])
        except (ValueError, KeyError, TypeError) as exc:
            raise BadReply(f"{self.host}/api/version did not answer like Ollama; is this an Ollama server?") from exc

    def list_models(self) -> dict[str, str]:
        """Installed models as {canonical name: digest}."""
        reply, _ = self._call("list models", "", self._client.list)
        return {canonical_model(m.model or ""): m.digest or "" for m in reply.models}

    def show(self, model: str) -> ollama.ShowResponse:
        reply, _ = self._call("show model", model, lambda: self._client.show(model))
        return reply

    def embed(self, model: str, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """Unit float32 vectors, one row per text, in batches. Over-long input raises InputTooLong naming its index."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), batch_size):
            rows.append(self._embed_batch(model, list(texts[start:start + batch_size]), offset=start))
        return _unit_rows(np.vstack(rows))

    def chat(self, model: str, messages: list[dict], *, format: dict | str | None, options: dict,
             think: bool | None) -> ChatReply:
        """One non-streaming chat call. `think=None` leaves the field out (the server decides)."""
        reply, retries = self._call("chat", model, lambda: self._client.chat(
            model=model, messages=messages, format=format, options=options, think=think, stream=False))
        message = reply.message
        return ChatReply(
            content=message.content or "",
            thinking=getattr(message, "thinking", None) or "",
            done_reason=reply.done_reason,
            prompt_tokens=reply.prompt_eval_count,
            output_tokens=reply.eval_count,
            total_ms=_ms(reply.total_duration),
            load_ms=_ms(reply.load_duration),
            prompt_eval_ms=_ms(reply.prompt_eval_duration),
            eval_ms=_ms(reply.eval_duration),
            retries=retries,
        )

    # -- plumbing ------------------------------------------------------------------------------------------
    def _embed_batch(self, model: str, batch: list[str], *, offset: int) -> np.ndarray:
        # truncate=False: the server refuses an over-long input instead of silently embedding a cut copy.
        try:
            reply, _ = self._call("embed", model, lambda: self._client.embed(model=model, input=batch, truncate=False))
        except InputTooLong:
            if len(batch) == 1:
                raise InputTooLong(f"input {offset} is longer than {model}'s context", item_index=offset) from None
            for i, text in enumerate(batch):  # find which one, so the message can name it
                self._embed_batch(model, [text], offset=offset + i)
            raise
        vectors = np.asarray(reply.embeddings, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(batch):
            raise BadReply(f"{self.host}: embed returned {len(reply.embeddings)} vectors for {len(batch)} inputs")
        return vectors

    def _call(self, what: str, model: str, fn: Callable[[], T]) -> tuple[T, int]:
        """Run fn, retrying 503 and dropped connections with exponential backoff; map failures to our errors."""
        attempts = self.settings.retries + 1
        for attempt in range(attempts):
            with self._lock:
                self.calls += 1
            try:
                return fn(), attempt
            except ollama.ResponseError as exc:
                if exc.status_code == 503 and attempt + 1 < attempts:
                    self._sleep(self.settings.backoff_s * 2**attempt)
                    continue
                raise self._status_error(what, model, exc) from None
            except _DROPPED as exc:
                if attempt + 1 < attempts:
                    self._sleep(self.settings.backoff_s * 2**attempt)
                    continue
                raise ServerUnreachable(
                    f"the server at {self.host} dropped the connection during {what} {attempts} times ({exc}); "
                    "check that `ollama serve` is still running") from None
            except (ConnectionError, httpx.ConnectError) as exc:
                raise ServerUnreachable(
                    f"no Ollama server answered at {self.host} ({what}). Start it with `ollama serve`, or point "
                    "--host / OLLAMA_HOST at it") from exc
            except httpx.TimeoutException as exc:
                raise OllamaTimeout(
                    f"{what} with {model or 'the server'} took longer than {self.settings.timeout_s:g} s at "
                    f"{self.host}; raise --timeout, or check the server is not overloaded") from exc
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _status_error(self, what: str, model: str, exc: ollama.ResponseError) -> Exception:
        text = str(exc.error or "")
        low = text.lower()
        if exc.status_code == 404 and "not found" in low:
            return ModelMissing(f"model '{model}' is not on the server at {self.host}; run `ollama pull {model}`")
        if exc.status_code == 503:
            return ServerBusy(f"the server at {self.host} stayed busy (503) through {self.settings.retries} retries "
                              f"during {what}; wait, or lower --workers")
        if exc.status_code == 400 and "exceed" in low and "context" in low:
            return InputTooLong(f"{what}: input longer than {model}'s context ({text})")
        if exc.status_code == -1:
            return BadReply(f"{what}: the server reported an error mid-reply: {text}")
        return BadReply(f"{what} with {model or 'the server'} failed: HTTP {exc.status_code}: {text}")


def preflight(client: OllamaClient, *, chat_model: str | None, embed_model: str | None) -> ServerInfo:
    """Before any work: the server answers, the models are installed, and each can do its job."""
    version = client.version()
    installed = client.list_models()
    models: dict[str, ModelInfo] = {}
    for model, role in ((embed_model, "embedding"), (chat_model, "completion")):
        if model is None:
            continue
        name = canonical_model(model)
        if name not in installed:
            raise ModelMissing(f"model '{model}' is not installed on the server at {client.host}; "
                               f"run `ollama pull {model}`")
        models[model] = _model_info(name, installed[name], client.show(model))
        caps = models[model].capabilities
        if caps and role not in caps:  # servers before v0.6.4 report no capabilities: nothing to check then
            raise ModelMissing(f"model '{model}' cannot be used for {role} (it reports {', '.join(caps)}); "
                               f"choose another model")
    return ServerInfo(client.host, version, models)


def _model_info(name: str, digest: str, show: ollama.ShowResponse) -> ModelInfo:
    info = dict(show.modelinfo or {})
    context = next((v for k, v in info.items() if k.endswith(".context_length")), None)
    width = next((v for k, v in info.items() if k.endswith(".embedding_length")), None)
    return ModelInfo(name, digest, tuple(show.capabilities or ()), context, width)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)


def _ms(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e6
