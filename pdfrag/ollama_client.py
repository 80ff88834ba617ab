"""Ollama's native API behind the model-server seam (pdfrag.model_server), through the official `ollama` client.

Every failure leaves here as one of our own exceptions (pdfrag.errors) with a message that says what to do.
Error text differs between Ollama releases, so replies are classified by status code and a loose substring only.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace
from typing import Callable, Literal, Sequence, TypeVar

import httpx
import numpy as np

# `import ollama` makes a default client from $OLLAMA_HOST, and an address it cannot parse (a CR LF in it, a port
# that is no number) raises ValueError there, in every command that imports this module. The variable is set
# aside while it loads; the address is checked where a client is made (pdfrag/backends.py), in one line.
_HOST = os.environ.pop("OLLAMA_HOST", None)
try:
    import ollama
finally:
    if _HOST is not None:
        os.environ["OLLAMA_HOST"] = _HOST

from .bounded_http import BoundedTransport, Bounds, BoundsExceeded, NestedTooDeep, json_body  # noqa: E402
from .errors import (  # noqa: E402
    BadReply,
    GenerationAborted,
    InputTooLong,
    ModelMissing,
    ServerBusy,
    ServerTimeout,
    ServerUnreachable,
)
from .model_server import (  # noqa: E402
    ChatReply,
    ClientSettings,
    ModelInfo,
    ServerInfo,
    bounds_error,
    check_vectors,
    embed_in_batches,
    load_chat_model,
    preflight,
    snippet,
)
from .redaction import Redactor, redacting, url_secrets, without_userinfo  # noqa: E402

__all__ = ["ChatReply", "ClientSettings", "ModelInfo", "OllamaClient", "ServerInfo", "canonical_model",
           "load_chat_model", "preflight", "prefixes_for", "resolve_host"]

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

# How long the preflight load keeps the chat model in memory: long enough for the first case to arrive. Each
# later request resets the server's timer to its own default.
LOAD_KEEP_ALIVE = "10m"
ABORTED = "generation aborted (repeated tokens)"

# Connection failures that happen after a request was sent: the server (or a proxy) hung up. Worth a retry.
_DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
T = TypeVar("T")


def resolve_host(flag: str | None = None) -> str:
    """The server address: the flag, then $OLLAMA_HOST, then Ollama's default."""
    return flag or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST


def prefixes_for(model: str) -> tuple[str, str]:
    """(document prefix, query prefix) for an embedding model; empty strings when it needs none. Names other
    servers use count too: `nomic-ai/nomic-embed-text-v1.5` (vLLM), `nomic-embed-text-v1.5.f16.gguf` (llama.cpp)."""
    base = _base_name(model)
    if base in EMBED_PREFIXES:
        return EMBED_PREFIXES[base]
    last = base.rsplit("/", 1)[-1]
    return next((v for k, v in EMBED_PREFIXES.items() if last.startswith(k)), ("", ""))


def canonical_model(name: str) -> str:
    """`nomic-embed-text` -> `nomic-embed-text:latest`, lower-cased, as the server matches names."""
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def _base_name(model: str) -> str:
    return canonical_model(model).rsplit(":", 1)[0]


class OllamaClient:
    """A thin, retrying wrapper over `ollama.Client` that speaks in our types and exceptions (a ModelServer)."""

    backend = "ollama"

    def __init__(self, settings: ClientSettings = ClientSettings(), *, sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        address = resolve_host(settings.host)  # with any user:password@, which only the connection sees
        self.host = without_userinfo(address)  # the form shown and stored
        self.redact = Redactor(url_secrets(address))
        timeout = httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s)
        self._transport = BoundedTransport(httpx, Bounds(settings.timeout_s, settings.max_body_bytes), address,
                                           env_proxies=False)  # model servers are reached directly (docs/hardening.md)
        self._client = ollama.Client(host=address, timeout=timeout, transport=self._transport,
                                     follow_redirects=False, trust_env=False)
        self._sleep = sleep
        self._lock = threading.Lock()  # --workers share one client
        self.calls = 0  # HTTP calls made, retries included: benchmarks and tests read it

    @property
    def _flag(self) -> str:
        """The flag (and variable) that names this server, for messages."""
        flag = self.settings.host_flag
        return f"{flag} / OLLAMA_HOST" if flag == "--host" else flag

    # -- calls ---------------------------------------------------------------------------------------------
    @redacting
    def version(self) -> str:
        try:
            reply, _ = self._call("GET /api/version", "", lambda: self._client._request_raw("GET", "/api/version"))
        except ModelMissing:  # a 404 here means the path is unknown: some other web server answered
            raise BadReply(f"{self.host} answered but has no /api/version; is it an Ollama server? Check "
                           f"{self._flag}") from None
        try:
            return str(json_body(reply.text)["version"])
        except NestedTooDeep as exc:
            raise bounds_error(exc, self.host, "GET /api/version", "", self.settings.max_body_bytes) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise BadReply(f"{self.host}/api/version did not answer like Ollama; is this an Ollama server?") from exc

    @redacting
    def list_models(self) -> dict[str, str]:
        """Installed models as {canonical name: digest}."""
        reply, _ = self._call("list models", "", self._client.list)
        return {canonical_model(m.model or ""): m.digest or "" for m in reply.models}

    @redacting
    def show(self, model: str) -> ollama.ShowResponse:
        reply, _ = self._call("show model", model, lambda: self._client.show(model))
        return reply

    @redacting
    def embed(self, model: str, texts: Sequence[str], *, batch_size: int = 32, dim: int | None = None) -> np.ndarray:
        """Unit float32 vectors, one row per text, in batches. Over-long input raises InputTooLong naming its index.

        Every vector must be finite and `dim` wide (when None: as wide as the first vector returned); anything
        else raises BadReply naming the input, so a broken reply is never indexed or cached."""
        return embed_in_batches(lambda batch, offset, width: self._embed_batch(model, batch, offset=offset, dim=width),
                                model, texts, batch_size=batch_size, dim=dim)

    @redacting
    def chat(self, model: str, messages: list[dict], *, format: dict | Literal["", "json"] | None, options: dict,
             think: bool | None) -> ChatReply:
        """One non-streaming chat call. `format` is a JSON Schema, "json" or ""/None (no constraint), the values
        Ollama accepts; `think=None` leaves the field out (the server decides)."""
        reply, retries = self._call("chat", model, lambda: self._client.chat(
            model=model, messages=messages, format=format, options=options, think=think, stream=False))
        message = reply.message
        if reply.done is False and not reply.done_reason:  # Ollama's repeated-token abort: done false, no reason
            raise GenerationAborted(f"{ABORTED}: {self.host} stopped {model} early (done: false, no done_reason)",
                                    partial=message.content or "")
        return ChatReply(
            content=self.redact(message.content or ""),  # a password echoed into the answer goes no further
            thinking=self.redact(getattr(message, "thinking", None) or ""),
            done_reason=reply.done_reason,
            prompt_tokens=reply.prompt_eval_count,
            output_tokens=reply.eval_count,
            total_ms=_ms(reply.total_duration),
            load_ms=_ms(reply.load_duration),
            prompt_eval_ms=_ms(reply.prompt_eval_duration),
            eval_ms=_ms(reply.eval_duration),
            retries=retries,
        )

    @redacting
    def load(self, model: str, *, keep_alive: str = LOAD_KEEP_ALIVE) -> float:
        """Load a chat model into memory (a chat with no messages) and return the wall time in ms, so the
        first question's timeout does not pay for a cold start."""
        started = time.perf_counter()
        self._call("load", model, lambda: self._client.chat(model=model, messages=[], keep_alive=keep_alive,
                                                             stream=False))
        return (time.perf_counter() - started) * 1000

    @redacting
    def warm_up(self, model: str, info: ModelInfo) -> ModelInfo:
        return replace(info, load_ms=round(self.load(model), 3))

    @redacting
    def identify(self, *, chat_model: str | None, embed_model: str | None) -> ServerInfo:
        """The server answers, the models are installed, and each can do its job (`/api/show` capabilities)."""
        version = self.version()
        installed = self.list_models()
        models: dict[str, ModelInfo] = {}
        for model, role in ((embed_model, "embedding"), (chat_model, "completion")):
            if model is None:
                continue
            name = canonical_model(model)
            if name not in installed:
                raise ModelMissing(f"model '{model}' is not installed on the server at {self.host}; "
                                   f"run `ollama pull {model}`")
            models[model] = _model_info(name, installed[name], self.show(model))
            caps = models[model].capabilities
            if caps and role not in caps:  # servers before v0.6.4 report no capabilities: nothing to check then
                raise ModelMissing(f"model '{model}' cannot be used for {role} (it reports {', '.join(caps)}); "
                                   f"choose another model")
        return ServerInfo(self.host, version, models)

    # -- plumbing ------------------------------------------------------------------------------------------
    def _embed_batch(self, model: str, batch: list[str], *, offset: int, dim: int | None) -> np.ndarray:
        # truncate=False: the server refuses an over-long input instead of silently embedding a cut copy.
        # The raw reply is read here, not through the client's pydantic model, so a bad shape gets our message.
        body = {"model": model, "input": batch, "truncate": False}
        reply, _ = self._call("embed", model, lambda: self._client._request_raw("POST", "/api/embed", json=body))
        return _embeddings(reply, f"bad reply from {self.host}: embed with {model}", len(batch), offset, dim)

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
            except BoundsExceeded as exc:
                raise bounds_error(exc, self.host, what, model, self.settings.max_body_bytes) from None
            except RecursionError:  # the `ollama` package parsed a body nested too deeply
                raise bounds_error(NestedTooDeep(), self.host, what, model, self.settings.max_body_bytes) from None
            except (ConnectionError, httpx.ConnectError) as exc:
                raise ServerUnreachable(
                    f"no Ollama server answered at {self.host} ({what}). Start it with `ollama serve`, or point "
                    f"{self._flag} at it") from exc
            except httpx.TimeoutException as exc:
                raise ServerTimeout(
                    f"{what} with {model or 'the server'} took longer than {self.settings.timeout_s:g} s at "
                    f"{self.host}; raise --timeout, or check the server is not overloaded") from exc
            except (ValueError, TypeError) as exc:  # a body that is not JSON, or not the API's shape (pydantic)
                raise BadReply(f"bad reply from {self.host}: {what} with {model or 'the server'}: "
                               f"{_describe(exc)}") from None
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _status_error(self, what: str, model: str, exc: ollama.ResponseError) -> Exception:
        text = str(exc.error or "")
        low = text.lower()
        if exc.status_code == 404 and "not found" in low:
            return ModelMissing(f"model '{model}' is not on the server at {self.host}; run `ollama pull {model}`")
        if exc.status_code == 503:
            return ServerBusy(f"the server at {self.host} stayed busy (503) through {self.settings.retries} retries "
                              f"during {what}; wait, or lower --workers")
        if ("exceed" in low and "context" in low) or "longer than the context length" in low:
            # "exceeds the context length" (embed, 400); "the prompt is longer than the context length" (chat
            # with context shift off): both mean the input does not fit.
            fix = _EMBED_CONTEXT_FIX if what == "embed" else "raise --num-ctx (the context Ollama gives the model)"
            return InputTooLong(f"{what} with {model}: {self.host} refused the input as too long: \"{text}\"; on the "
                                f"server: {fix}; or send less text", server_said=text, server_fix=fix)
        if "repeat limit" in low:  # Ollama's "prediction aborted, token repeat limit reached" (HTTP 500)
            return GenerationAborted(f"{ABORTED}: {self.host} answered HTTP {exc.status_code}: {text}")
        if exc.status_code == -1:
            return BadReply(f"{what}: the server reported an error mid-reply: {text}")
        return BadReply(f"{what} with {model or 'the server'} failed: HTTP {exc.status_code}: {text}")


# Embeddings get the context the server gives the model: a request's num_ctx, else a Modelfile's, else
# OLLAMA_CONTEXT_LENGTH, never more than the model was trained on (nomic-embed-text: 2048 tokens).
_EMBED_CONTEXT_FIX = ("give the embedding model a longer context (OLLAMA_CONTEXT_LENGTH, or PARAMETER num_ctx in a "
                      "Modelfile), up to the context it was trained on")


def _model_info(name: str, digest: str, show: ollama.ShowResponse) -> ModelInfo:
    info = dict(show.modelinfo or {})
    context = next((v for k, v in info.items() if k.endswith(".context_length")), None)
    width = next((v for k, v in info.items() if k.endswith(".embedding_length")), None)
    return ModelInfo(name, digest, tuple(show.capabilities or ()), context, width)


def _embeddings(reply: httpx.Response, where: str, count: int, offset: int, dim: int | None) -> np.ndarray:
    """The vectors of an /api/embed reply as a (count, dim) float32 matrix; BadReply saying what was expected and
    what came for anything else. `offset` numbers the inputs as the caller does."""
    try:
        body = json_body(reply.text)
    except NestedTooDeep as exc:
        raise BadReply(f"{where}: {exc}") from None
    except ValueError as exc:
        raise BadReply(f"{where}: the body is not JSON ({exc}): {snippet(reply.text)}") from None
    rows = body.get("embeddings") if isinstance(body, dict) else None
    if not isinstance(rows, list):
        raise BadReply(f"{where}: expected an object with an 'embeddings' list, got {snippet(reply.text)}")
    return check_vectors(rows, where, count, offset, dim, reply.text)


def _describe(exc: Exception) -> str:
    """One line about a reply that is not the API's shape, from the JSON or pydantic error."""
    if isinstance(exc, json.JSONDecodeError):
        return f"the body is not JSON ({exc.msg} at character {exc.pos})"
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic.ValidationError
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "top level"
        return f"not the API's reply shape: {where}: {first.get('msg')} ({len(errors())} problem(s))"
    if isinstance(exc, TypeError):
        return "not the API's reply shape: the body is not a JSON object"
    return str(exc)


def _ms(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e6
