"""OpenAI-compatible model servers (vLLM, llama.cpp, SGLang, LM Studio, LiteLLM, Ollama `/v1`) behind the
model-server seam, through the official `openai` client with its own retries off, so the retry rules here are the
only ones (429 and 503 retried, honouring Retry-After).

What differs between servers is handled here and nowhere else (docs/backends.md): the structured-output fallback
(`json_schema`, then llama.cpp's older `json_object` with a schema, then none), where reasoning comes back
(`reasoning`, `reasoning_content` or `<think>` in the content), the thinking switch (`chat_template_kwargs`, or
`reasoning_effort` on Ollama's /v1), where the context window is read (`max_model_len`, llama.cpp's `meta.n_ctx`
and `/props`), each server's wording of "too long" (`_CONTEXT`). With no weights digest on this API, a model's
identity is its name, root and the server's version ("identity by name only").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeVar, cast

import httpx2
import numpy as np
import openai

from .asking import split_thinking
from .bounded_http import BoundedTransport, Bounds, BoundsExceeded, json_body
from .errors import (
    BadReply,
    GenerationAborted,
    InputError,
    InputTooLong,
    ModelMissing,
    ServerBusy,
    ServerTimeout,
    ServerUnreachable,
)
from .model_server import (
    NAME_ONLY,
    ChatReply,
    ClientSettings,
    ModelInfo,
    ServerInfo,
    bounds_error,
    check_vectors,
    embed_in_batches,
    snippet,
)
from .ollama_client import canonical_model
from .openai_replies import (
    as_dict,
    bounds_behind,
    connection_refused,
    error_text,
    finite_number,
    json_object,
    retry_after,
    vectors_in_order,
    whole_count,
)
from .redaction import Redactor, redacting, url_secrets, without_userinfo
from .transports import PooledTransports

__all__ = ["DEFAULT_BASE_URL", "EMBED_PROBE", "OpenAIClient", "resolve_base_url"]

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # vLLM's default
EMBED_PROBE = "embedding probe"  # the one text preflight embeds to see that the embedding model embeds
FORMAT_MODES = ("json_schema", "json_object", "prompt")  # the structured-output fallback chain, in order
_CONTEXT = re.compile(r"maximum context length|exceeds the available context size|exceed_context_size_error|"
                      r"longer than the model's context length|longer than the context length|"
                      r"exceeds the context length|too large to process|larger than the max context size|"
                      r"ContextWindowExceededError", re.I)
# llama.cpp embeds a text in one physical batch (-ub, default 512 tokens) whatever its context (-c): a longer
# input is refused with HTTP 500 "input (N tokens) is too large to process. increase the physical batch size".
_PHYSICAL_BATCH = re.compile(r"physical batch", re.I)
_PHYSICAL_BATCH_FIX = ("start llama-server with -b and -ub at least the longest input in tokens (its physical batch; "
                       "a larger -c does not help)")
_CONTEXT_FIX = "give it a longer context (llama.cpp: a larger -c or fewer -np slots; vLLM: --max-model-len)"
_MISSING = re.compile(r"does not exist|not found|invalid model name", re.I)
T = TypeVar("T")


def resolve_base_url(flag: str | None = None) -> str:
    """The base URL: the flag, then $OPENAI_BASE_URL, then vLLM's default; no trailing slash."""
    return (flag or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def api_key(env_name: str | None) -> str:
    """The key from the environment variable `env_name` (None: OPENAI_API_KEY when set, else a placeholder the
    client needs for servers without auth). The key is never logged or stored."""
    name = env_name or "OPENAI_API_KEY"
    value = os.environ.get(name, "")
    if env_name and not value:
        raise InputError(f"--api-key-env {env_name}: that environment variable is not set or empty; export it, or "
                         "leave out --api-key-env for a server without authentication")
    if not (value.isascii() and value.isprintable()):  # an HTTP header cannot carry it: the request never leaves
        raise InputError(f"the API key in ${name} holds a line break, control or non-ASCII character (a line end "
                         "copied with it?); export the key alone")
    return value or "EMPTY"


class _FormatRefused(Exception):
    """The server refused the response_format sent: the next mode of FORMAT_MODES is tried."""


class _StatusRefused(BadReply):
    """The server answered a request with an error status none of our errors names (e.g. llama.cpp's 501 for
    embeddings on a server started without them)."""


class OpenAIClient:
    """A retrying client of one OpenAI-compatible base URL that speaks in our types and exceptions."""

    backend = "openai"
    sets_context = False  # the server decides the context window; num_ctx cannot be sent on this API

    def __init__(self, settings: ClientSettings = ClientSettings(backend="openai"), *,
                 sleep: Callable[[float], None] = time.sleep):
        self.settings = settings
        address = resolve_base_url(settings.host)  # with any user:password@, which only the connection sees
        self.host = without_userinfo(address)  # the form shown and stored
        self.root = address[:-3] if address.endswith("/v1") else address
        key = api_key(settings.api_key_env)
        self.redact = Redactor((key, *url_secrets(address)))  # whatever a server echoes, neither leaves
        timeout = httpx2.Timeout(settings.timeout_s, connect=settings.connect_timeout_s)
        self._transport = BoundedTransport(httpx2, Bounds(settings.timeout_s, settings.max_body_bytes), address,
                                           pool=PooledTransports, env_proxies=False)  # docs/hardening.md
        self._client = openai.OpenAI(base_url=address, api_key=key, timeout=timeout,
                                     max_retries=0, http_client=openai.DefaultHttpxClient(
                                         transport=cast(httpx2.BaseTransport, self._transport),  # duck-typed
                                         timeout=timeout, follow_redirects=False,
                                         trust_env=False))
        self._sleep = sleep
        self._lock = threading.Lock()  # --workers share one client
        self.calls = 0  # HTTP calls made, retries included
        self.kind: str | None = None  # set by identify(): vllm, llama.cpp, sglang, ollama or generic
        self.format_mode = FORMAT_MODES[0]  # moves down the chain when the server refuses a mode
        self.embedding_order: str | None = None  # INDEXED or LISTED once an embedding reply came
        self._counts_tokens = True  # until the server shows it has no token counter

    # -- calls ---------------------------------------------------------------------------------------------
    @redacting
    def chat(self, model: str, messages: list[dict], *, format: dict | Literal["", "json"] | None, options: dict,
             think: bool | None) -> ChatReply:
        """One chat completion. Sent: temperature, top_p 1, seed, max_tokens and max_completion_tokens (both:
        servers read one or the other) from `options`; `think=False` sends the server's thinking switch."""
        body = _chat_body(model, messages, options, think, kind=self.kind)
        started = time.perf_counter()
        reply, retries = self._chat_with_format(model, body, format)
        total_ms = (time.perf_counter() - started) * 1000
        return self._chat_reply(self.redact(reply.text), model, total_ms, retries)  # an echo in the answer too

    @redacting
    def embed(self, model: str, texts: Sequence[str], *, batch_size: int = 32, dim: int | None = None) -> np.ndarray:
        """Unit float32 vectors, one row per text, from `/embeddings`; checked as on Ollama."""
        return embed_in_batches(lambda batch, offset, width: self._embed_batch(model, batch, offset, width),
                                model, texts, batch_size=batch_size, dim=dim)

    @redacting
    def count_tokens(self, model: str, messages: list[dict]) -> int | None:
        """The prompt's tokens as the server counts them, chat template included (llama.cpp's
        `/chat/completions/input_tokens`); None where the server offers no counter or the count fails (an error
        status, a reply we cannot read, no reply within --timeout): then it is never asked again and the caller
        estimates instead."""
        if self.kind != "llama.cpp" or not self._counts_tokens:
            return None
        body = {"model": model, "messages": messages}
        try:
            reply, _ = self._call("count tokens", model, lambda: self._post("/chat/completions/input_tokens", body))
            count = whole_count(json_object(reply.text, "count tokens"), "input_tokens")
        except (ModelMissing, BadReply, ServerTimeout):  # 404 from a build without it, a bad or no reply
            count = None
        if count is None:
            self._counts_tokens = False
        return count

    @redacting
    def identify(self, *, chat_model: str | None, embed_model: str | None) -> ServerInfo:
        """The served models (`/v1/models`), the server's make and version, each model's name identity and
        context window. A model the server does not serve is refused with the list of those it does, and an
        embedding model must embed one short text (a chat-only server lists its model all the same)."""
        served = self._served_models()
        kind, version, props = self._detect()
        self.kind = kind
        models: dict[str, ModelInfo] = {}
        for model in (embed_model, chat_model):
            if model is None:
                continue
            entry = _find(served, model, kind)
            if entry is None:
                raise ModelMissing(_missing_message(model, self.host, [str(e.get("id")) for e in served]))
            models[model] = _model_info(entry, version, props)
        if embed_model is not None:
            models[embed_model] = self._probe_embeddings(embed_model, models[embed_model])
        return ServerInfo(self.host, version, models, backend=self.backend, kind=kind)

    @redacting
    def warm_up(self, model: str, info: ModelInfo) -> ModelInfo:
        """A one-token chat: servers that load on demand (LM Studio, Ollama, llama.cpp router) load the model
        now, not in the first case's timeout; its `system_fingerprint` goes into the identity."""
        body = {"model": model, "messages": [{"role": "user", "content": "Reply with OK."}], "stream": False,
                "temperature": 0, "max_tokens": 1, "max_completion_tokens": 1}
        started = time.perf_counter()
        reply, _ = self._call("load", model, lambda: self._post("/chat/completions", body))
        load_ms = round((time.perf_counter() - started) * 1000, 3)
        fingerprint = json_object(reply.text, f"bad reply from {self.host}: load {model}").get("system_fingerprint")
        return replace(info, load_ms=load_ms,
                       system_fingerprint=fingerprint if isinstance(fingerprint, str) else info.system_fingerprint)

    # -- plumbing ------------------------------------------------------------------------------------------
    def _chat_with_format(self, model: str, body: dict, format: dict | str | None) -> tuple[httpx2.Response, int]:
        """Post the chat with the current structured-output mode; a refused mode moves the client down the
        chain for every later call (the server will refuse it again)."""
        while True:
            mode = self.format_mode
            request = _with_format(body, format, mode)
            try:
                return self._call("chat", model, lambda: self._post("/chat/completions", request))  # noqa: B023
            except _FormatRefused as exc:
                later = FORMAT_MODES[FORMAT_MODES.index(mode) + 1:]
                if not later:
                    raise BadReply(f"chat with {model}: {self.host} refused every structured-output mode: "
                                   f"{exc}") from None
                with self._lock:
                    if self.format_mode == mode:
                        self.format_mode = later[0]

    def _chat_reply(self, text: str, model: str, total_ms: float, retries: int) -> ChatReply:
        where = f"bad reply from {self.host}: chat with {model}"
        data = json_object(text, where)
        try:
            choice = data["choices"][0]
            message = choice["message"]
            content = message.get("content") or ""
            if not isinstance(content, str):
                raise TypeError(type(content).__name__)
        except (KeyError, IndexError, TypeError, AttributeError):
            raise BadReply(f"{where}: not a chat completion (expected choices[0].message.content), got "
                           f"{snippet(text)}") from None
        thinking = next((t for t in (message.get("reasoning"), message.get("reasoning_content"))
                         if isinstance(t, str) and t), "")
        if not thinking and "</think>" in content:  # no reasoning parser on the server: split it here
            content, leaked = split_thinking(content)
            thinking = leaked.strip()
        usage, timings = as_dict(data.get("usage")), as_dict(data.get("timings"))  # timings: llama.cpp
        reason = choice.get("finish_reason")
        return ChatReply(content=content, thinking=thinking, done_reason=reason if isinstance(reason, str) else None,
                         prompt_tokens=whole_count(usage, "prompt_tokens"),
                         output_tokens=whole_count(usage, "completion_tokens"), total_ms=round(total_ms, 3),
                         load_ms=None, prompt_eval_ms=finite_number(timings, "prompt_ms"),
                         eval_ms=finite_number(timings, "predicted_ms"), retries=retries)

    def _embed_batch(self, model: str, batch: list[str], offset: int, dim: int | None) -> np.ndarray:
        body = {"model": model, "input": batch, "encoding_format": "float"}
        reply, _ = self._call("embed", model, lambda: self._post("/embeddings", body))
        where = f"bad reply from {self.host}: embed with {model}"
        data = json_object(reply.text, where)
        items = data.get("data")
        if not isinstance(items, list) or not all(isinstance(i, dict) and "embedding" in i for i in items):
            raise BadReply(f"{where}: expected an object with a 'data' list of embeddings, got {snippet(reply.text)}")
        vectors, self.embedding_order = vectors_in_order(items, where)
        return check_vectors(vectors, where, len(batch), offset, dim, reply.text)

    def _probe_embeddings(self, model: str, info: ModelInfo) -> ModelInfo:
        """One one-input embedding call: a server that does not embed with `model` is refused now, naming the
        flags to change, not at the first chunk of the index build. The vector's width fills a width the model
        list did not give."""
        try:
            vector = self._embed_batch(model, [EMBED_PROBE], 0, info.embedding_length)
        except (_StatusRefused, ModelMissing) as exc:  # a reply of the wrong shape is said as it is
            raise ModelMissing(f"model '{model}' at {self.host} does not serve embeddings: a one-text embedding "
                               f"request failed ({exc}). Point --embed-host at a server started for embeddings "
                               "(llama.cpp: --embeddings; vLLM: an embedding model), or give another "
                               "--embed-model") from None
        return info if info.embedding_length else replace(info, embedding_length=int(vector.shape[1]))

    def _served_models(self) -> list[dict]:
        try:
            reply, _ = self._call("list models", "", lambda: self._get("/models"))
        except ModelMissing:
            raise BadReply(f"{self.host} answered but has no /models; give {self.settings.host_flag} the server's "
                           "base URL ending in /v1 (e.g. http://127.0.0.1:8000/v1)") from None
        data = json_object(reply.text, f"bad reply from {self.host}: list models").get("data")
        if not isinstance(data, list):
            raise BadReply(f"bad reply from {self.host}: list models: expected a 'data' list, got "
                           f"{snippet(reply.text)}")
        return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]

    def _detect(self) -> tuple[str, str, dict]:
        """(make, version, llama.cpp /props) from the endpoints each server has beside /v1: vLLM's /version,
        llama.cpp's /props, SGLang's /server_info, Ollama's /api/version."""
        for path, kind, field in (("/version", "vllm", "version"), ("/props", "llama.cpp", "build_info"),
                                  ("/server_info", "sglang", "version"), ("/api/version", "ollama", "version")):
            body = self._probe(path)
            if body is not None and isinstance(body.get(field), str):
                return kind, body[field], body if kind == "llama.cpp" else {}
        return "generic", "unknown", {}

    def _probe(self, path: str) -> dict | None:
        """GET a root endpoint; None when the server has none (an error status, a body that is not a JSON object:
        probes only add identity). A body outside the bounds is refused as any reply."""
        try:
            reply = self._client.get(self.root + path, cast_to=httpx2.Response)
            body = json_body(reply.text)
        except (BoundsExceeded, openai.APIConnectionError) as exc:  # raised as it is, or wrapped
            if (outside := bounds_behind(exc)) is not None:
                raise bounds_error(outside, self.root, f"GET {path}", "", self.settings.max_body_bytes) from None
            return None
        except (openai.APIError, ValueError):
            return None
        return body if isinstance(body, dict) else None

    def _post(self, path: str, body: dict) -> httpx2.Response:
        return self._client.post(path, body=body, cast_to=httpx2.Response)

    def _get(self, path: str) -> httpx2.Response:
        return self._client.get(path, cast_to=httpx2.Response)

    def _call(self, what: str, model: str, fn: Callable[[], T]) -> tuple[T, int]:
        """Run fn, retrying 429/503 (waiting what Retry-After says, else backing off) and dropped connections;
        map failures to our errors."""
        attempts = self.settings.retries + 1
        for attempt in range(attempts):
            with self._lock:
                self.calls += 1
            try:
                return fn(), attempt
            except BoundsExceeded as exc:  # raised by the transport as it is, or wrapped (below)
                raise bounds_error(exc, self.host, what, model, self.settings.max_body_bytes) from None
            except openai.APITimeoutError as exc:  # a subclass of APIConnectionError: first
                raise ServerTimeout(f"{what} with {model or 'the server'} took longer than "
                                    f"{self.settings.timeout_s:g} s at {self.host}; raise --timeout, or check the "
                                    "server is not overloaded") from exc
            except openai.APIConnectionError as exc:
                if (outside := bounds_behind(exc)) is not None:  # not a dropped link: asking again gets the same
                    raise bounds_error(outside, self.host, what, model, self.settings.max_body_bytes) from None
                if connection_refused(exc):
                    raise ServerUnreachable(f"no server at {self.host} ({what}): the connection was refused. Start "
                                            f"the model server, or point {self.settings.host_flag} at its base "
                                            "URL ending in /v1") from None
                if attempt + 1 < attempts:
                    self._sleep(self.settings.backoff_s * 2**attempt)
                    continue
                raise ServerUnreachable(f"the server at {self.host} dropped the connection during {what} {attempts} "
                                        "times; check that it is still running") from None
            except openai.APIStatusError as exc:
                if exc.status_code in (429, 503) and attempt + 1 < attempts:
                    self._sleep(retry_after(exc) or self.settings.backoff_s * 2**attempt)
                    continue
                raise self._status_error(what, model, exc) from None
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _status_error(self, what: str, model: str, exc: openai.APIStatusError) -> Exception:
        text, code = error_text(exc), exc.status_code
        if code in (429, 503):
            return ServerBusy(f"the server at {self.host} stayed busy (HTTP {code}) through {self.settings.retries} "
                              f"retries during {what}; wait, or lower --workers")
        if code == 400 and "response_format" in text.lower():
            return _FormatRefused(f"HTTP 400: {text}")
        if _CONTEXT.search(text):
            fix = _PHYSICAL_BATCH_FIX if _PHYSICAL_BATCH.search(text) else _CONTEXT_FIX
            return InputTooLong(f"{what} with {model}: {self.host} refused the input as too long: \"{text}\"; on the "
                                f"server: {fix}; or send less text (--top-k, --chunk-size)", server_said=text,
                                server_fix=fix)
        if code == 404 or (code == 400 and _MISSING.search(text)):
            return ModelMissing(_missing_message(model, self.host, self._served_ids()))
        if code in (401, 403):
            return BadReply(f"{self.host} refused the request (HTTP {code}: {text}); put the server's API key in "
                            "an environment variable and name it with --api-key-env")
        if "repeat limit" in text.lower():
            return GenerationAborted(f"generation aborted (repeated tokens): {self.host} answered HTTP {code}: "
                                     f"{text}")
        return _StatusRefused(f"{what} with {model or 'the server'} failed: HTTP {code}: {text}")

    def _served_ids(self) -> list[str] | None:
        try:
            return [str(m["id"]) for m in self._served_models()]
        except Exception:  # noqa: BLE001 - only to enrich a message about another failure
            return None


def _chat_body(model: str, messages: list[dict], options: dict, think: bool | None, *, kind: str | None) -> dict:
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": False,
                            "temperature": options.get("temperature", 0), "top_p": 1}
    if options.get("seed") is not None:
        body["seed"] = options["seed"]
    if options.get("num_predict") is not None:
        body["max_tokens"] = body["max_completion_tokens"] = options["num_predict"]
    if think is False:  # Ollama's /v1 ignores chat_template_kwargs and reads reasoning_effort
        body |= {"reasoning_effort": "none"} if kind == "ollama" else {
            "chat_template_kwargs": {"enable_thinking": False}}
    return body


def _with_format(body: dict, format: dict | str | None, mode: str) -> dict:
    """The body with the structured-output request of `mode` (FORMAT_MODES) for `format` (a JSON Schema, "json",
    or nothing)."""
    if not format:
        return body
    if format == "json":
        return body | {"response_format": {"type": "json_object"}}
    if mode == "json_schema":  # `name` is required by vLLM and SGLang
        return body | {"response_format": {"type": "json_schema",
                                           "json_schema": {"name": "reply", "strict": True, "schema": format}}}
    if mode == "json_object":  # llama.cpp's older form
        return body | {"response_format": {"type": "json_object", "schema": format}}
    messages = [dict(m) for m in body["messages"]]
    messages[-1]["content"] = (f"{messages[-1].get('content') or ''}\n\nReply with JSON only, matching this JSON "
                               f"Schema:\n{json.dumps(format)}")
    return body | {"messages": messages}


def _model_info(entry: dict, version: str, props: dict) -> ModelInfo:
    meta, settings = as_dict(entry.get("meta")), as_dict(props.get("default_generation_settings"))
    # llama.cpp: /props gives the per-slot window (n_ctx / -np), meta.n_ctx may be the whole cache
    context = next((v for v in (entry.get("max_model_len"), settings.get("n_ctx"), meta.get("n_ctx"))
                    if isinstance(v, int) and not isinstance(v, bool) and v > 0), None)
    root = next((v for v in (entry.get("root"), props.get("model_path")) if isinstance(v, str) and v), None)
    width = meta.get("n_embd") if isinstance(meta.get("n_embd"), int) else None
    identity = json.dumps({"backend": "openai", "model": entry["id"], "root": root, "version": version},
                          sort_keys=True)
    return ModelInfo(entry["id"], hashlib.sha256(identity.encode("utf-8")).hexdigest(), (), context, width,
                     identity=NAME_ONLY, root=root)


def _find(served: list[dict], model: str, kind: str) -> dict | None:
    """The served entry of `model`: its id, or one of its `aliases` (llama.cpp lists them). llama.cpp in
    single-model mode answers whatever name is sent, so a name it does not list is refused here: otherwise a run
    asking for one model would record that name beside another model's answers."""
    entry = next((m for m in served if m["id"] == model or model in _aliases(m)), None)
    if entry is None and kind == "ollama":  # Ollama resolves `name` as `name:latest`, case-insensitively
        entry = next((m for m in served if canonical_model(m["id"]) == canonical_model(model)), None)
    return entry


def _aliases(entry: dict) -> list[str]:
    aliases = entry.get("aliases")
    return [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else []


def _missing_message(model: str, host: str, served: list[str] | None) -> str:
    listed = ("it serves: " + ", ".join(served)) if served else "it lists no models" if served == [] else \
        "its model list could not be read"
    return (f"model '{model}' is not served at {host}; {listed}. Give one of those as --chat-model / "
            "--embed-model, or start the server with that model")
