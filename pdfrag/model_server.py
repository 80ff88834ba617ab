"""The model-server seam: one small protocol every model server client implements, and the records they share.

Two clients implement `ModelServer`: `OllamaClient` (Ollama's native API) and `OpenAIClient` (the OpenAI-compatible
API of vLLM, llama.cpp, SGLang, LM Studio, LiteLLM and Ollama's `/v1`). The answer path, the index build, drafting
and the several-servers pool use only this protocol; nothing outside the two clients knows which API is spoken.
`pdfrag.backends.connect` makes the client a `ClientSettings` names.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import numpy as np

from .bounded_http import DEFAULT_MAX_BODY_BYTES, BodyTooLarge, BoundsExceeded, Redirected
from .errors import BadReply, InputError, InputTooLong, ServerBusy
from .text import lone_surrogate

BACKENDS = ("ollama", "openai")
NAME_ONLY = "identity by name only"  # an OpenAI-compatible server reports no weights digest


@dataclass(frozen=True)
class ClientSettings:
    """How to reach the servers. `timeout_s` bounds each HTTP call from connect to the last byte of the reply, and
    `max_body_bytes` its decoded body (pdfrag/bounded_http.py); retries apply to busy replies (503, 429) and dropped
    links. `backend` is the API spoken at `host`; embeddings go to `embed_host` with `embed_backend`
    (None: the chat server's). The API key (OpenAI backend) is read from the environment variable `api_key_env`
    (None: OPENAI_API_KEY when set); the key itself is never held in settings, manifests or logs."""

    host: str | None = None
    timeout_s: float = 300.0
    connect_timeout_s: float = 10.0
    retries: int = 3
    backoff_s: float = 1.0
    backend: str = "ollama"
    embed_host: str | None = None
    embed_backend: str | None = None
    api_key_env: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES  # one reply's decoded body; read no further
    host_flag: str = "--host"  # the flag that names `host`, for messages (the embedding server's: --embed-host)

    def __post_init__(self) -> None:
        if not all(0 < t < math.inf for t in (self.timeout_s, self.connect_timeout_s)):
            raise InputError(f"timeouts must be positive, finite seconds, got {self.timeout_s} and "
                             f"{self.connect_timeout_s}")
        if self.max_body_bytes < 1:
            raise InputError(f"max-body-bytes must be at least 1, got {self.max_body_bytes}")
        if self.retries < 0 or self.backoff_s < 0:
            raise InputError(f"retries and backoff cannot be negative, got {self.retries} and {self.backoff_s}")
        for name in ("backend", "embed_backend"):
            value = getattr(self, name)
            if value is not None and value not in BACKENDS:
                raise InputError(f"{name.replace('_', '-')} must be one of {', '.join(BACKENDS)}, got {value!r}")

    @property
    def separate_embeddings(self) -> bool:
        """Whether embeddings go to another server or API than the chat model's."""
        return (self.embed_host is not None and self.embed_host != self.host) or \
            (self.embed_backend is not None and self.embed_backend != self.backend)

    def for_embeddings(self) -> ClientSettings:
        """The settings of the embedding server (the chat server's when none is given)."""
        return replace(self, host=self.embed_host or self.host, backend=self.embed_backend or self.backend,
                       embed_host=None, embed_backend=None,
                       host_flag="--embed-host" if self.embed_host not in (None, self.host) else self.host_flag)


@dataclass(frozen=True)
class ChatReply:
    """What the chat endpoint returned, durations in milliseconds (None where the server reports none)."""

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
    cached: bool | None = None  # from the answer cache (True), asked with the cache on (False), no cache (None)


@dataclass(frozen=True)
class ModelInfo:
    """One model as the server reports it. `digest` is Ollama's weights digest; on an OpenAI-compatible server,
    which reports none, it is the SHA-256 of the model's name identity (id, root, server version) and `identity`
    says so: a changed name or version then counts as a changed model everywhere digests are compared."""

    name: str
    digest: str
    capabilities: tuple[str, ...] = ()
    context_length: int | None = None
    embedding_length: int | None = None
    load_ms: float | None = None  # wall time of the preflight load (chat model only), queueing included
    identity: str = "digest"  # "digest" (Ollama) or NAME_ONLY
    root: str | None = None  # the served model's path or repository (vLLM `root`, llama.cpp `model_path`)
    system_fingerprint: str | None = None  # from the warm-up reply, when the server sends one

    def to_dict(self) -> dict:
        data = vars(self) | {"capabilities": list(self.capabilities)}
        if self.identity == "digest":  # Ollama manifests keep their shape
            for key in ("identity", "root", "system_fingerprint"):
                data.pop(key)
        return data


@dataclass(frozen=True)
class ServerInfo:
    """What the preflight found: recorded in index and run manifests."""

    host: str
    version: str
    models: dict[str, ModelInfo] = field(default_factory=dict)
    backend: str = "ollama"
    kind: str | None = None  # the OpenAI-compatible server's make when detected (vllm, llama.cpp, ollama)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"host": self.host, "version": self.version,
                               "models": {name: info.to_dict() for name, info in self.models.items()}}
        if self.backend != "ollama":
            out = {"backend": self.backend, "kind": self.kind, "identity": NAME_ONLY} | out
        return out


class ModelServer(Protocol):
    """A model server: chat with a JSON Schema, embed a batch, identify the models, warm a model up."""

    host: str
    backend: str
    calls: int  # HTTP calls made, retries included

    def chat(self, model: str, messages: list[dict], *, format: dict | Literal["", "json"] | None, options: dict,
             think: bool | None) -> ChatReply:
        """One chat call. `options` holds temperature, seed, num_ctx and num_predict; `think=None` leaves the
        choice to the server, False asks for no thinking."""
        ...

    def embed(self, model: str, texts: Sequence[str], *, batch_size: int = 32, dim: int | None = None) -> np.ndarray:
        """Unit float32 vectors, one row per text, each checked (finite, `dim` wide)."""
        ...

    def identify(self, *, chat_model: str | None, embed_model: str | None) -> ServerInfo:
        """The server's version and the models' identities; raises when a model is missing or unfit."""
        ...

    def warm_up(self, model: str, info: ModelInfo) -> ModelInfo:
        """Load the chat model where the server has a load step; `info` with the wall time (and fingerprint)."""
        ...


def server_window(client: ModelServer, info: ModelInfo) -> int | None:
    """The context window the server decides for `info`'s model (an OpenAI-compatible server: its per-slot window),
    or None where the client sets it (Ollama's num_ctx)."""
    return None if getattr(client, "sets_context", True) else info.context_length


PREFLIGHT_S = 10.0  # the check's own deadline per server: a busy server is said to be busy, not waited on
SAY_WAITING_AFTER_S = 1.0  # a check still going after this is said (a fast server says nothing)


def preflight(client: ModelServer, *, chat_model: str | None, embed_model: str | None,
              status: Callable[[str], None] | None = None, load: bool = True,
              deadline_s: float = PREFLIGHT_S) -> ServerInfo:
    """Before any work: the server answers, the models are there, and each can do its job, within `deadline_s`
    (else ServerBusy: a server whose slots are all taken queues the check's embedding; the call goes on in the
    background until the client's own timeout, and nothing waits for it). `status` hears what the check waits for
    when it takes longer than a second. With `load`, the chat model is then loaded and its load time recorded
    (`load_chat_model`): a load takes its own time, so it is outside the deadline."""
    server = _storable(_identify_within(client, chat_model, embed_model, status, deadline_s))
    return load_chat_model(client, server, chat_model, status) if load and chat_model is not None else server


def _identify_within(client: ModelServer, chat_model: str | None, embed_model: str | None,
                     status: Callable[[str], None] | None, deadline_s: float) -> ServerInfo:
    done: Future[ServerInfo] = Future()

    def check() -> None:
        try:
            done.set_result(client.identify(chat_model=chat_model, embed_model=embed_model))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as it is
            done.set_exception(exc)

    threading.Thread(target=check, name=f"preflight {client.host}", daemon=True).start()
    asked = _asked(client, chat_model, embed_model)
    try:
        return done.result(timeout=min(SAY_WAITING_AFTER_S, deadline_s))
    except FutureTimeout:
        if status:
            status(f"checking {asked}: waiting for the server…")
    try:
        return done.result(timeout=max(deadline_s - SAY_WAITING_AFTER_S, 0.0))
    except FutureTimeout:
        flag = getattr(getattr(client, "settings", None), "host_flag", "--host")
        raise ServerBusy(f"checking {asked}: no answer within {deadline_s:g} s: the server is busy (every slot "
                         "taken by other requests, or a model loading); wait and try again, or lower the load on it "
                         f"(if this is not the server you mean, check {flag})") from None


def _asked(client: ModelServer, chat_model: str | None, embed_model: str | None) -> str:
    """What the check asks `client`'s server, in words."""
    jobs = ([f"serves {chat_model}"] if chat_model else []) + ([f"embeds with {embed_model}"] if embed_model else [])
    return f"whether {client.host} {' and '.join(jobs) or 'answers'}"


def load_chat_model(client: ModelServer, server: ServerInfo, chat_model: str,
                    status: Callable[[str], None] | None = None) -> ServerInfo:
    """Load the chat model so the first case's timeout does not pay for it; `status` hears "loading MODEL…"
    before that wait. Returns `server` with the load time recorded."""
    if status:
        status(f"loading {chat_model}…")
    loaded = client.warm_up(chat_model, server.models[chat_model])
    return _storable(replace(server, models=server.models | {chat_model: loaded}))


def _storable(server: ServerInfo) -> ServerInfo:
    """`server` when every text it reports can be stored (it goes into the manifests); a lone surrogate (legal in
    JSON, not text) is refused now, before any work, naming the field, not when the manifest is written."""
    if (found := lone_surrogate(server.to_dict())) is not None:
        path, text, bad = found
        raise BadReply(f"bad reply from {server.host}: identity.{path}: {snippet(text)} holds a lone surrogate "
                       f"U+{ord(bad):04X}, which is not text; the server reports it, and no file can store it: fix "
                       "the server's model names or version")
    return server


def embed_in_batches(embed_batch: Callable[[list[str], int, int | None], np.ndarray], model: str,
                     texts: Sequence[str], *, batch_size: int, dim: int | None) -> np.ndarray:
    """`embed_batch(batch, offset, dim)` over `texts` in batches, as unit rows. A batch refused as too long is
    asked again one text at a time, so the InputTooLong names the input (`item_index`) and keeps the server's
    own words about it."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    rows: list[np.ndarray] = []
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start:start + batch_size])
        try:
            rows.append(embed_batch(batch, start, dim))
        except InputTooLong as exc:
            raise _name_too_long(embed_batch, batch, start, dim, exc) from None
        dim = rows[-1].shape[1]
    return unit_rows(np.vstack(rows))


def _name_too_long(embed_batch: Callable[[list[str], int, int | None], np.ndarray], batch: list[str],
                   offset: int, dim: int | None, refusal: InputTooLong) -> InputTooLong:
    """The refusal naming the first input of `batch` that is refused alone (the server's words about that one);
    the batch's own refusal, unnamed, when each input passes alone."""
    if len(batch) == 1:
        return refusal.at(offset)
    for i, text in enumerate(batch):
        try:
            embed_batch([text], offset + i, dim)
        except InputTooLong as exc:
            return exc.at(offset + i)
    return refusal


def check_vectors(rows: Any, where: str, count: int, offset: int, dim: int | None, raw: str) -> np.ndarray:
    """`rows` (the reply's vectors) as a (count, dim) float32 matrix; BadReply saying what was expected and what
    came for anything else. `offset` numbers the inputs as the caller does; `raw` is the body, for messages."""
    if not isinstance(rows, list):
        raise BadReply(f"{where}: expected a list of vectors, got {snippet(raw)}")
    if len(rows) != count:
        raise BadReply(f"{where}: expected {count} vectors (one per input), got {len(rows)}")
    want = dim or (len(rows[0]) if isinstance(rows[0], list) else 0)
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row or len(row) != want:
            got = f"{len(row)} numbers" if isinstance(row, list) else snippet(json.dumps(row))
            source = "as wide as the existing vectors" if dim else "as wide as the first vector"
            raise BadReply(f"{where}: input {offset + i}: expected a vector of {want} numbers ({source}), got "
                           f"{got}", item_index=offset + i)
    matrix = np.asarray(rows)
    if matrix.ndim != 2 or matrix.dtype.kind not in "fiu":  # strings, nulls, lists or objects somewhere
        i = next(i for i, row in enumerate(rows) if not all(_is_number(x) for x in row))
        bad = next(x for x in rows[i] if not _is_number(x))
        raise BadReply(f"{where}: input {offset + i}: expected numbers, got {snippet(json.dumps(bad))}",
                       item_index=offset + i)
    matrix = matrix.astype(np.float32)
    broken = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
    if broken.size:
        raise BadReply(f"{where}: input {offset + int(broken[0])}: the vector contains NaN or Inf values "
                       f"({broken.size} of {count} vectors in this batch); it was not used or cached",
                       item_index=offset + int(broken[0]))
    flat = np.flatnonzero(matrix.max(axis=1) == matrix.min(axis=1))  # all zero, or one value throughout
    if flat.size:
        i = int(flat[0])
        raise BadReply(f"{where}: input {offset + i}: the vector is constant (every value {float(matrix[i, 0]):g}), "
                       f"which no embedding model gives ({flat.size} of {count} vectors in this batch); it was not "
                       "used or cached", item_index=offset + i)
    return matrix


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def bounds_error(exc: BoundsExceeded, host: str, what: str, model: str, cap: int) -> BadReply:
    """Our error for a reply outside the bounds (pdfrag/bounded_http.py), saying what to do."""
    who = f"{what} with {model}" if model else what
    if isinstance(exc, Redirected):
        return BadReply(f"{host} answered {who} with {exc}: the prompt would go to another host; point --host at "
                        f"the server itself ({exc.location} if you trust it)")
    if isinstance(exc, BodyTooLarge):
        return BadReply(f"bad reply from {host}: {who}: {exc} (--max-body-bytes {cap:,})")
    return BadReply(f"bad reply from {host}: {who}: {exc}")


def snippet(text: str, limit: int = 80) -> str:
    """A short, quoted, one-line excerpt of text from outside, for error messages."""
    text = " ".join(str(text).split())
    return repr(text if len(text) <= limit else text[:limit] + "…")


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
