"""An Ollama-compatible HTTP server for tests: a rule-based stand-in, **not a model**.

It speaks the shapes of the real Ollama API (embed, chat, metadata, errors, version), so code can be tested
through the official ``ollama`` client over a real socket. Token counts are whitespace tokens.

Embeddings (``/api/embed``) are a deterministic *lexical* stand-in: the lower-cased word tokens (regex ``\\w+``)
are each hashed (blake2b) to one of the model's dimensions with a hashed sign and counted there; 0.1 more goes to
a position and sign hashed from the exact full text, so texts with the same words still differ a little; then the
vector is L2-normalised. Texts sharing words get a higher cosine, and the words of a ``search_query: `` or
``search_document: `` prefix are tokens too, so a prefix changes the vector.

Chat (``/api/chat``) answers with ``FakeOllama.chat_rule(request_body)``, by default :func:`overlap_rule`.
Fault modes copy real failures: 503 busy, dropped connections, slow replies, limited parallel slots, ``<think>``
leakage into content and mid-stream error lines; broken embeddings (``embed_fault``: NaN/Inf values, the wrong
width, uneven rows, strings, a vector too many, a body that is not JSON or not the API's envelope); broken chat
replies (``chat_fault``: not JSON, a wrong envelope, the repeated-token abort as ``done: false`` or as a 500); a
huge reply (``huge_reply_chars``); faults of the wire (``wire_fault``: a dripped body or dripped headers, a redirect,
a 300 MB stream, JSON nested 200,000 deep; see WIRE_FAULTS); a cold model load (``load_delay_s``). ``version`` is
settable (e.g. ``0.0.0``).
Faults on ``/api/chat`` apply to answers, not to model loads (a chat with no messages), unless ``loads=True``.
The same server also speaks the OpenAI-compatible API (``/v1/models``, ``/v1/chat/completions``,
``/v1/embeddings``, and ``/version`` or ``/props``) in the dialect ``FakeOllama.openai`` picks: see
tests/fake_openai.py. Faults (``fail_next``, ``drop_next``, ``break_next``) apply to ``/v1/*`` paths too;
``fail_next(429, retry_after=S)`` adds a ``Retry-After`` header; ``ECHO`` in a fault's error text is replaced by the
request's ``Authorization`` header.
Standalone, from the repo root: ``python -m tests.fake_ollama --port 11434 [--delay S] [--slots N]``.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import itertools
import json
import math
import re
import socket
import threading
import time
import weakref
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

from tests import fake_openai

__all__ = ["FakeOllama", "ModelSpec", "ChatReply", "RecordedRequest", "overlap_rule",
           "lexical_embedding", "default_models", "STOPWORDS", "BUSY_ERROR", "REPEAT_LIMIT_ERROR", "EMBED_FAULTS",
           "CHAT_FAULTS", "WIRE_FAULTS"]

BUSY_ERROR = "server busy, please try again.  maximum pending requests exceeded"
REPEAT_LIMIT_ERROR = "prediction aborted, token repeat limit reached"  # ollama PR #18374
EMBED_FAULTS = ("nan", "inf", "short", "uneven", "strings", "extra", "not_json", "envelope", "zero", "constant")
CHAT_FAULTS = ("not_json", "envelope", "aborted", "repeat_limit")
# Faults of the wire itself, for answers (not loads or warm-ups) on `wire_paths`: a body dripped a byte every
# `drip_s` without end, headers dripped so, a 307 to `redirect_to`, a 200 streaming `huge_bytes` of JSON-looking
# text (never held whole), a 200 of JSON arrays nested `deep_levels` deep (streamed, 2 bytes a level).
# In a `fail_next` error text, ECHO is replaced by the request's Authorization header (a server echoing the key).
ECHO = "{authorization}"
WIRE_FAULTS = ("drip_body", "drip_headers", "redirect", "huge", "deep")
_MODIFIED_AT = "2025-06-01T09:00:00.5+02:00"  # RFC3339 with an offset, as Ollama lists local files
_LEAKS = {"tags": "<think>\n{thinking}\n</think>\n\n{content}", "close_only": "{thinking}\n</think>\n\n{content}"}
_LOAD_NS = 1_000_000  # reported load_duration
_NS_PER_TOKEN = 1_000  # reported prompt_eval/eval duration per token


@dataclass
class ModelSpec:
    """One installed model. ``context_length`` is the trained context in tokens."""
    capabilities: list[str]
    family: str
    embedding_length: int = 2560
    context_length: int = 4096
    parameters: str = ""  # /api/show "parameters": one "key value" per line
    parameter_size: str = "4.0B"
    quantization_level: str = "Q4_K_M"
    size: int = 2_500_000_000  # bytes, as listed by /api/tags
    digest: str | None = None  # as listed by /api/tags; None: the SHA-256 of the canonical name


def default_models() -> dict[str, ModelSpec]:
    """The project's two models with the metadata Ollama reports for them."""
    return {
        "nomic-embed-text:latest": ModelSpec(
            ["embedding"], "nomic-bert", embedding_length=768, context_length=2048,
            parameters="num_ctx 8192", parameter_size="137M", quantization_level="F16", size=274_302_450),
        "qwen3:4b": ModelSpec(["completion", "tools", "thinking"], "qwen3", context_length=262_144,
                              parameters="temperature 0.6\ntop_k 20\ntop_p 0.95"),
    }


@dataclass(frozen=True)
class ChatReply:
    """A chat rule's full answer. ``thinking=None`` uses a stand-in text; ``done_reason=None`` is "stop"."""
    content: str
    thinking: str | None = None
    done_reason: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: ``body`` is parsed JSON (None if empty or not JSON), header names lower-case."""
    method: str
    path: str
    body: Any
    headers: dict[str, str]


def _canonical(name: str) -> str:
    """Ollama matches names case-insensitively, and a name without a tag means ``:latest``."""
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"


def _normalise(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vec))
    return [x / norm for x in vec] if norm else vec


def lexical_embedding(text: str, dim: int) -> list[float]:
    """The stand-in embedding described in the module docstring: unit length, deterministic."""
    vec = [0.0] * dim
    keys = [(w, 1.0) for w in re.findall(r"\w+", text.lower())] + [("\x00full-text\x00" + text, 0.1)]
    for key, weight in keys:
        h = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")
        vec[h % dim] += weight if (h >> 40) & 1 else -weight
    return _normalise(vec)


def _count_tokens(text: str) -> int:
    return len(text.split())


def _cut_tokens(text: str, limit: int) -> str:
    """Keep the first ``limit`` whitespace tokens, with the original spacing between them."""
    ends = [0] + [m.end() for m in re.finditer(r"\S+", text)]
    return text if len(ends) - 1 <= limit else text[: ends[limit]]


STOPWORDS = frozenset("""the and for what how when does which with per are is can that this from into
was were has have had its not but why who whom where there their they them than then these those
will would should could about any all did you your our been being also such""".split())
_SOURCE_LINE = re.compile(r"^\s*\[source:\s*(.+?)\s*\](.*)$")
_QUESTION_LINE = re.compile(r"^\s*Question:\s*(.*)$")


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) >= 3 and w not in STOPWORDS}


def _parse_prompt(prompt: str) -> tuple[str, list[tuple[str, str]]]:
    """Split a prompt into (question, [(source_id, passage_text), ...]) per :func:`overlap_rule`."""
    question, passages, current = "", [], None
    for line in prompt.splitlines():
        if m := _SOURCE_LINE.match(line):
            current = (m.group(1), [m.group(2)])
            passages.append(current)
        elif m := _QUESTION_LINE.match(line):
            question, current = m.group(1), None
        elif line.strip() == "---":
            current = None
        elif current is not None:
            current[1].append(line)
    return question, [(sid, "\n".join(lines).strip()) for sid, lines in passages]


def overlap_rule(body: dict) -> dict:
    """Default chat rule: answer with the passage sentence sharing the most words with the question.

    Reads the content of the last ``user`` message:
    - A line ``Question: <text>`` gives the question (the last such line wins; it also ends a passage).
    - A passage starts at a line ``[source: <source id>]`` (text after the ``]`` belongs to it) and runs
      until the next ``[source: ...]`` line, a ``---`` line, a ``Question:`` line or the end.
    - Passages are split into sentences after ``.``, ``!`` or ``?`` followed by whitespace.
    - A sentence scores the number of distinct lower-cased ``\\w+`` words of length >= 3, not in
      :data:`STOPWORDS`, that it shares with the question. Ties: first passage, then first sentence.
    - Returns ``{"answer": s, "citations": [{"source_id": id, "quote": s}]}`` for the best sentence ``s``
      (verbatim from the passage, stripped), or ``{"answer": "", "citations": []}`` if its score is < 2.
    """
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    question, passages = _parse_prompt(str(users[-1].get("content") or "") if users else "")
    wanted, best = _content_words(question), (1, "", "")  # a sentence must beat 1 to count
    for source_id, text in passages:
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            score = len(_content_words(sentence) & wanted)
            if score > best[0]:
                best = (score, source_id, sentence.strip())
    if not best[2]:
        return {"answer": "", "citations": []}
    return {"answer": best[2], "citations": [{"source_id": best[1], "quote": best[2]}]}


class _ApiError(Exception):
    """Answered as ``{"error": message}`` with ``status``, like every Ollama error."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _details(spec: ModelSpec) -> dict:
    return {"parent_model": "", "format": "gguf", "family": spec.family, "families": [spec.family],
            "parameter_size": spec.parameter_size, "quantization_level": spec.quantization_level}


def _as_reply(value: Any) -> ChatReply:
    """A rule may return a ChatReply, a str (the content) or a dict (JSON-encoded into the content)."""
    if isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        value = ChatReply(value)
    if not isinstance(value, ChatReply):
        raise TypeError(f"chat_rule returned {type(value).__name__}; expected ChatReply, str or dict")
    return value


def _embed_inputs(raw: Any) -> list[str]:
    """Ollama's rules: a string or a list of strings; "" or no input means nothing to embed."""
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return list(raw)
    if raw is None or isinstance(raw, str):
        return [raw] if raw else []
    raise _ApiError(400, "invalid input type")


def _chat_metrics(body: dict, reply: ChatReply, started_ns: int) -> dict:
    prompt_tokens = sum(_count_tokens(str(m.get("content") or "")) for m in body.get("messages") or [])
    eval_tokens = _count_tokens(reply.content) + _count_tokens(reply.thinking or "")
    prompt_ns, eval_ns = prompt_tokens * _NS_PER_TOKEN, max(eval_tokens, 1) * _NS_PER_TOKEN
    total = max(time.perf_counter_ns() - started_ns, _LOAD_NS + prompt_ns + eval_ns)
    return {"total_duration": total, "load_duration": _LOAD_NS, "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": prompt_ns, "eval_count": eval_tokens, "eval_duration": eval_ns}


@dataclass
class _Fault:
    kind: str  # "fail", "drop" or "break" (error names the broken reply)
    remaining: int
    path: str | None  # None: any /api/* path
    status: int = 0
    error: str = ""
    loads: bool = False  # also hit model loads (a chat with no messages)
    retry_after: float | None = None  # seconds, sent as a Retry-After header with a failure


class _Raw(bytes):
    """A reply body sent as it is, not as JSON."""


def _is_load(req: RecordedRequest) -> bool:
    return req.path == "/api/chat" and isinstance(req.body, dict) and not req.body.get("messages")


def _break_embeddings(vectors: list[list[float]], fault: str) -> Any:
    """The /api/embed body for ``embed_fault``: what a broken server or proxy might send."""
    if fault == "not_json":
        return _Raw(b"<html><body>502 Bad Gateway</body></html>")
    if fault == "envelope":
        return {"data": [{"embedding": v} for v in vectors]}  # another API's shape
    broken = [list(v) for v in vectors]
    if fault in ("nan", "inf"):
        broken[0][0] = math.nan if fault == "nan" else math.inf
    elif fault == "short":  # 384 dims where the index has 768
        broken = [v[: len(v) // 2] for v in broken]
    elif fault == "uneven":
        broken[-1] = broken[-1][:-1]
    elif fault == "strings":
        broken[0][1] = "0.25"
    elif fault == "extra":
        broken.append(broken[0])
    elif fault in ("zero", "constant"):  # every vector one number throughout
        broken = [[0.0 if fault == "zero" else 0.25] * len(v) for v in broken]
    return {"embeddings": broken}

class FakeOllama:
    """A local Ollama stand-in on 127.0.0.1: ``with FakeOllama() as s: ...`` or ``start()``/``stop()``."""

    def __init__(self, port: int = 0, *, delay_s: float = 0.0, slots: int | None = None, host: str = "127.0.0.1"):
        self._port, self._host, self._lock, self._stopping = port, host, threading.Lock(), threading.Event()
        self._httpd: _Server | None = None
        self.reset()
        self.delay_s, self.slots = delay_s, slots

    def reset(self) -> None:
        """Back to defaults: default models and rule, no faults, nothing recorded."""
        with self._lock:
            self.version = "0.12.6"
            self.models: dict[str, ModelSpec] = default_models()
            self.chat_rule: Callable[[dict], ChatReply | str | dict] = overlap_rule
            self.delay_s, self.slots = 0.0, None
            self.embed_delay_s: float | None = None  # None: embeds wait `delay_s` too
            self.leak_think: str | None = None  # None, "tags" or "close_only"
            self.mid_stream_error: str | None = None
            self.embed_fault: str | None = None  # one of EMBED_FAULTS, for every /api/embed while set
            self.chat_fault: str | None = None  # one of CHAT_FAULTS, for every answer (not loads) while set
            self.huge_reply_chars: int | None = None  # answers become valid JSON at least this long
            self.wire_fault: str | None = None  # one of WIRE_FAULTS, for every answer on wire_paths while set
            self.wire_paths: tuple[str, ...] = ("/api/chat", "/v1/chat/completions")
            self.drip_s, self.huge_bytes, self.deep_levels = 0.5, 300_000_000, 200_000
            self.redirect_to = "http://127.0.0.2:9/api/chat"
            self.load_delay_s = 0.0  # a model's first request waits this long, like a cold load from disk
            self.loaded: set[str] = set()  # models loaded so far (for load_delay_s)
            self.token_counts = 0  # llama.cpp-style token counts asked (tests/fake_openai.py)
            self.requests: list[RecordedRequest] = []
            self.chat_in_flight = self.peak_chat_in_flight = self.chats_answered = 0
            self.hold_after: int | None = None  # answers after this many wait for release() (or stop())
            self._released = threading.Event()
            self._faults: list[_Fault] = []
            self.openai = fake_openai.Dialect()  # what /v1/* answers like (tests/fake_openai.py)

    @property
    def slots(self) -> int | None:
        """At most this many /api/chat requests are answered at once (like OLLAMA_NUM_PARALLEL)."""
        return self._slots

    @slots.setter
    def slots(self, value: int | None) -> None:
        self._slots, self._slot_sem = value, threading.BoundedSemaphore(value) if value else None

    def start(self) -> FakeOllama:
        self._stopping.clear()
        self._httpd = _Server((self._host, self._port), _Handler)
        self._httpd.fake, self._httpd.conns = self, weakref.WeakSet()
        threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop like a killed server: close open connections and wake handlers sleeping in ``delay_s``."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            for conn in list(self._httpd.conns):  # else idle keep-alive connections would still be served
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            self._httpd = None

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._httpd.server_address[1] if self._httpd else self._port}"

    def fail_next(self, status: int = 503, count: int = 1, error: str = BUSY_ERROR, *,
                  path: str | None = None, loads: bool = False, retry_after: float | None = None) -> None:
        """The next ``count`` /api/* or /v1/* requests (on ``path`` only, if given) get ``status`` and the error
        body of their API, with a ``Retry-After`` header when ``retry_after`` is given. Model loads are skipped
        unless ``loads``."""
        with self._lock:
            self._faults.append(_Fault("fail", count, path, status, error, loads, retry_after))

    def drop_next(self, count: int = 1, path: str | None = None, *, loads: bool = False) -> None:
        """The next ``count`` /api/* requests (on ``path`` only, if given) are closed with no response.
        Model loads are skipped unless ``loads``."""
        with self._lock:
            self._faults.append(_Fault("drop", count, path, loads=loads))

    def break_next(self, fault: str, count: int = 1, *, path: str = "/api/chat") -> None:
        """The next ``count`` requests on ``path`` (/api/chat answers or /api/embed) get the broken reply
        ``fault`` (one of CHAT_FAULTS or EMBED_FAULTS), like setting ``chat_fault``/``embed_fault`` for a while."""
        known = CHAT_FAULTS if "chat" in path else EMBED_FAULTS
        if fault not in known:
            raise ValueError(f"unknown fault {fault!r} for {path}; known: {', '.join(known)}")
        with self._lock:
            self._faults.append(_Fault("break", count, path, error=fault))

    def chat_bodies(self) -> list[Any]:
        """Bodies of the /api/chat requests that ask something (model loads left out), in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if r.path == "/api/chat" and not _is_load(r)]

    def bodies(self, path: str) -> list[Any]:
        """Parsed bodies of the requests received on ``path``, in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if r.path == path]

    def count(self, path: str | None = None) -> int:
        """How many requests arrived (on ``path``, if given), faulted ones included."""
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def _record(self, req: RecordedRequest) -> _Fault | None:
        """Record a request and take the fault, if any, that applies to it."""
        with self._lock:
            self.requests.append(req)
            for fault in self._faults:
                if fault.remaining > 0 and fault.path in (None, req.path) and req.path.startswith(("/api/", "/v1/")) \
                        and (fault.loads or not _is_load(req)):
                    fault.remaining -= 1
                    return fault
        return None

    def _model(self, body: dict, not_found: str) -> tuple[str, ModelSpec]:
        name = body.get("model") or body.get("name") or ""
        if not name:
            raise _ApiError(400, "model is required")
        for key, spec in list(self.models.items()):
            if _canonical(key) == _canonical(name):
                return _canonical(key), spec
        raise _ApiError(404, not_found.format(name))

    def counts(self) -> dict[str, int]:
        """GET /_counts (this stand-in's own, no real server has it): chats answered so far and the most answered at
        once, for a benchmark that runs the server in another process."""
        with self._lock:
            return {"chats_answered": self.chats_answered, "peak_chat_in_flight": self.peak_chat_in_flight}

    def openai_bodies(self) -> dict[str, list[Any]]:
        """GET /_bodies (this stand-in's own): the bodies of every OpenAI-style chat completion and embedding request
        so far, in arrival order, for a benchmark that replays what the harness sent with the client alone."""
        return {"chat": self.bodies("/v1/chat/completions"), "embed": self.bodies("/v1/embeddings")}

    def release(self) -> None:
        """Let the answers held by ``hold_after`` go on."""
        self._released.set()

    def _hold(self) -> None:
        with self._lock:
            self.chats_answered += 1
            held = self.hold_after is not None and self.chats_answered > self.hold_after
        while held and not (self._released.wait(0.01) or self._stopping.is_set()):
            pass

    def _sleep(self, seconds: float | None = None) -> None:
        seconds = self.delay_s if seconds is None else seconds
        if seconds > 0:
            self._stopping.wait(seconds)

    def tags(self) -> dict:
        return {"models": [{"name": _canonical(k), "model": _canonical(k), "modified_at": _MODIFIED_AT,
                            "size": s.size,
                            "digest": s.digest or hashlib.sha256(_canonical(k).encode()).hexdigest(),
                            "details": _details(s)} for k, s in list(self.models.items())]}

    def show(self, body: dict) -> dict:
        name, spec = self._model(body, "model '{}' not found")
        info = {"general.architecture": spec.family, f"{spec.family}.context_length": spec.context_length,
                f"{spec.family}.embedding_length": spec.embedding_length}
        return {"license": "", "modelfile": f"# stand-in\nFROM {name}\n", "parameters": spec.parameters,
                "template": "{{ .Prompt }}", "details": _details(spec), "model_info": info,
                "capabilities": list(spec.capabilities), "modified_at": _MODIFIED_AT}

    def embed(self, body: dict, fault: str | None = None) -> dict | _Raw:
        started = time.perf_counter_ns()
        _, spec = self._model(body, 'model "{}" not found, try pulling it first')
        texts = _embed_inputs(body.get("input"))
        if not texts:
            return {"model": body["model"], "embeddings": []}
        self._sleep(self.embed_delay_s)  # None: the same delay as chat
        limit, num_ctx = spec.context_length, (body.get("options") or {}).get("num_ctx")
        if isinstance(num_ctx, int) and num_ctx > 0:  # the served context is min(num_ctx, trained)
            limit = min(limit, num_ctx)
        if body.get("truncate") is False and any(_count_tokens(t) > limit for t in texts):
            raise _ApiError(400, "the input length exceeds the context length")
        texts = [_cut_tokens(t, limit) for t in texts]
        dims = body.get("dimensions")
        size = dims if isinstance(dims, int) and 0 < dims < spec.embedding_length else spec.embedding_length
        vectors = [_normalise(lexical_embedding(t, spec.embedding_length)[:size]) for t in texts]
        if fault or self.embed_fault:
            broken = _break_embeddings(vectors, fault or self.embed_fault)
            return broken if isinstance(broken, _Raw) else {"model": body["model"], **broken}
        return {"model": body["model"], "embeddings": vectors,
                "total_duration": time.perf_counter_ns() - started + _LOAD_NS, "load_duration": _LOAD_NS,
                "prompt_eval_count": sum(map(_count_tokens, texts))}

    def chat(self, body: dict, fault: str | None = None) -> dict | list[dict] | _Raw:
        """The /api/chat reply: one JSON object, or the NDJSON lines when streaming (the default)."""
        started, think = time.perf_counter_ns(), self._chat_checks(body)
        base = {"model": body["model"], "created_at": datetime.now(timezone.utc).isoformat()[:-6] + "Z"}
        load_ns = self._load(body["model"])
        if not body.get("messages"):  # Ollama only loads the model
            return {**base, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "load",
                    "total_duration": load_ns, "load_duration": load_ns}
        if fault or self.chat_fault:
            return self._broken_chat(base, fault or self.chat_fault)
        reply = self._answer_chat(body, think)
        final = {**base, "done": True, "done_reason": reply.done_reason, **_chat_metrics(body, reply, started)}
        if body.get("stream") is not False:
            return _stream_lines(base, reply, final, self.mid_stream_error)
        if self.mid_stream_error:  # without streaming, a generation error is a plain 500
            raise _ApiError(500, self.mid_stream_error)
        return {**final, "message": _message(reply.content, reply.thinking)}

    def _load(self, model: str) -> int:
        """Nanoseconds spent loading: ``load_delay_s`` the first time a model is used, else the warm figure."""
        name = _canonical(model)
        with self._lock:
            cold = name not in self.loaded
            self.loaded.add(name)
        if cold and self.load_delay_s > 0:
            self._sleep(self.load_delay_s)
            return int(self.load_delay_s * 1e9)
        return _LOAD_NS

    def _broken_chat(self, base: dict, fault: str) -> dict | _Raw:
        """The reply for a chat fault (the two repeated-token aborts as Ollama sends them)."""
        if fault == "repeat_limit":
            raise _ApiError(500, REPEAT_LIMIT_ERROR)
        if fault == "aborted":  # 200, done false, no done_reason, no metrics
            return {**base, "message": {"role": "assistant", "content": "the the the the"}, "done": False}
        if fault == "envelope":
            return {**base, "response": "an /api/generate reply on the chat path", "done": True}
        return _Raw(b"upstream connect error or disconnect/reset before headers")

    def _chat_checks(self, body: dict) -> bool:
        """Validate a chat request as Ollama does; returns whether to think."""
        _, spec = self._model(body, "model '{}' not found")
        if "completion" not in spec.capabilities:
            raise _ApiError(400, f'"{body["model"]}" does not support chat')
        fmt = body.get("format")
        if fmt not in (None, "", "json") and not isinstance(fmt, dict):
            raise _ApiError(500, f'invalid format: {json.dumps(fmt)}; expected "json" or a valid JSON Schema object')
        think, capable = body.get("think"), "thinking" in spec.capabilities
        if isinstance(think, str) and think not in ("low", "medium", "high", "max"):
            raise _ApiError(400, f'invalid think value: "{think}"')
        if think not in (None, False) and not capable:
            raise _ApiError(400, f'"{body["model"]}" does not support thinking')
        return capable if think is None else think is not False

    def _answer_chat(self, body: dict, think: bool) -> ChatReply:
        """Wait for a free slot, then ``delay_s``, then ask the rule; tracks concurrency for benchmarks."""
        with self._slot_sem or contextlib.nullcontext():
            with self._lock:
                self.chat_in_flight += 1
                self.peak_chat_in_flight = max(self.peak_chat_in_flight, self.chat_in_flight)
            try:
                self._hold()
                self._sleep()
                return self._shape_reply(body, _as_reply(self.chat_rule(body)), think)
            except Exception as exc:  # a broken rule is a runner failure: 500
                raise _ApiError(500, f"chat_rule failed: {exc!r}") from exc
            finally:
                with self._lock:
                    self.chat_in_flight -= 1

    def _shape_reply(self, body: dict, reply: ChatReply, think: bool) -> ChatReply:
        """Apply ``leak_think`` and ``options.num_predict``; thinking is None when off or leaked."""
        thinking = reply.thinking or f"(stand-in reasoning: {getattr(self.chat_rule, '__name__', 'rule')})"
        content, done_reason = reply.content, reply.done_reason or "stop"
        if self.leak_think:
            content, think = _LEAKS[self.leak_think].format(thinking=thinking, content=content), False
        if self.huge_reply_chars:  # valid JSON, just far too long
            content = json.dumps({"answer": "x" * self.huge_reply_chars, "citations": []})  # one "token"
        limit = (body.get("options") or {}).get("num_predict")
        if isinstance(limit, int) and limit >= 0 and _count_tokens(content) > limit:
            content, done_reason = _cut_tokens(content, limit), "length"
        return ChatReply(content, thinking if think else None, done_reason)


def _message(content: str, thinking: str | None = None) -> dict:
    return {"role": "assistant", "content": content, **({"thinking": thinking} if thinking else {})}


def _stream_lines(base: dict, reply: ChatReply, final: dict, error: str | None) -> list[dict]:
    """Thinking pieces, content pieces, then the ``done`` line; or one piece and an error line."""
    def pieces(text: str) -> list[str]:  # word-sized, concatenating back to ``text``
        return re.findall(r"\s*\S+\s*|\s+", text)

    content = pieces(reply.content)
    if error:  # as when a runner dies mid-answer: the HTTP status is already 200
        return [{**base, "message": _message(content[0] if content else ""), "done": False}, {"error": error}]
    return ([{**base, "message": _message("", piece), "done": False} for piece in pieces(reply.thinking or "")]
            + [{**base, "message": _message(piece), "done": False} for piece in content]
            + [{**final, "message": _message("")}])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # hundreds of clients connect at once in the scale-out benchmark
    fake: FakeOllama
    conns: weakref.WeakSet  # open client sockets, so stop() can close keep-alive connections like a dead server

    def process_request(self, request: Any, client_address: Any) -> None:
        self.conns.add(request)
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out or disconnect are expected in tests: stay silent."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms delayed-ACK stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request log on stderr."""

    def _send(self, status: int, payload: bytes, ctype: str = "application/json; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"))

    def _dispatch(self) -> None:
        fake, path = self.server.fake, self.path.split("?", 1)[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = RecordedRequest(self.command, path, body, {k.lower(): v for k, v in self.headers.items()})
        fault = fake._record(req)
        if fault and fault.kind == "drop":
            self.close_connection = True
            return
        if fake.wire_fault and path in fake.wire_paths and not _is_load(req) \
                and not (isinstance(body, dict) and body.get("max_tokens") == 1):  # not the OpenAI warm-up
            self._wire(fake)
            return
        try:
            if fault and fault.kind == "fail":
                raise _ApiError(fault.status, fault.error.replace(ECHO, self.headers.get("Authorization") or ""))
            self._route(fake, path, raw, body, fault.error if fault else None)
        except fake_openai.OpenAIError as err:
            self._json(err.status, err.body(fake.openai))
        except _ApiError as err:
            wait = {"Retry-After": f"{fault.retry_after:g}"} if fault and fault.retry_after is not None else {}
            shaped = (fake_openai.OpenAIError(err.status, str(err)).body(fake.openai) if path.startswith("/v1/")
                      else {"error": str(err)})
            self._send(err.status, json.dumps(shaped).encode("utf-8"), headers=wait)
        except OSError:  # the client went away (timeouts, drops): nothing left to answer
            self.close_connection = True

    do_GET = do_HEAD = do_POST = _dispatch

    def _route(self, fake: FakeOllama, path: str, raw: bytes, body: Any, broken: str | None = None) -> None:
        gets = {"/api/version": lambda: {"version": fake.version}, "/api/tags": fake.tags, "/_counts": fake.counts,
                "/_bodies": fake.openai_bodies}
        posts = {"/api/show": fake.show, "/api/embed": lambda b: fake.embed(b, fault=broken),
                 "/api/chat": lambda b: fake.chat(b, fault=broken)}
        if path == "/" and self.command in ("GET", "HEAD"):
            self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
        elif path in gets and self.command in ("GET", "HEAD"):
            self._json(200, gets[path]())
        elif path in posts and self.command == "POST":
            if not isinstance(body, dict):
                raise _ApiError(400, "invalid JSON request body" if raw else "missing request body")
            result = posts[path](body)
            if isinstance(result, _Raw):
                self._send(200, bytes(result), "text/plain; charset=utf-8")
            elif isinstance(result, list):
                self._stream(result)
            else:
                self._json(200, result)
        elif (reply := fake_openai.route(fake, self.command, path, body, broken)) is not None:
            if isinstance(reply, bytes):
                self._send(200, reply, "text/plain; charset=utf-8")
            else:
                self._json(200, reply)
        else:
            self._send(404, b"404 page not found", "text/plain")

    def _wire(self, fake: FakeOllama) -> None:
        """Answer with `fake.wire_fault` (WIRE_FAULTS) until done or the client goes away."""
        self.close_connection = True
        try:
            if fake.wire_fault == "redirect":
                self._send(307, b"", headers={"Location": fake.redirect_to})
            elif fake.wire_fault == "drip_headers":
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Drip: " + b"x" * 100_000:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(fake.drip_s)
            elif fake.wire_fault == "drip_body":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for byte in b'{"message": {"role": "assistant", "content": "' + b"x" * 100_000:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(fake.drip_s)
            elif fake.wire_fault == "deep":
                self._chunked([b"[" * fake.deep_levels, b"]" * fake.deep_levels])
            else:  # huge: a megabyte at a time, never held whole
                head, piece = b'{"message": {"role": "assistant", "content": "', b"x" * 1_000_000
                self._chunked(itertools.chain([head], itertools.repeat(piece, fake.huge_bytes // len(piece))))
        except OSError:  # the client gave up: what a bounded client does
            pass

    def _chunked(self, pieces: Iterable[bytes]) -> None:
        """A 200 of JSON in chunked transfer encoding, one chunk per piece."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")

    def _stream(self, lines: list[dict]) -> None:
        """NDJSON over chunked transfer encoding, one object per line, as Ollama streams."""
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for obj in lines:
            data = json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")


def _named_rule(spec: str) -> Callable[[dict], ChatReply | str | dict]:
    """`module:name` is the rule; `module:name()` a factory called once for it."""
    module, _, name = spec.partition(":")
    factory = name.endswith("()")
    found = getattr(importlib.import_module(module), name.removesuffix("()"))
    return found() if factory else found


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted, for manual runs with OLLAMA_HOST pointed at it."""
    parser = argparse.ArgumentParser(prog="python -m tests.fake_ollama",
                                     description="A rule-based Ollama stand-in for tests (not a model).")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each chat/embed answer")
    parser.add_argument("--slots", type=int, default=None, help="max chat requests (either API) answered at once")
    parser.add_argument("--embed-delay", type=float, default=None, help="seconds before each embed answer "
                                                                         "(default: --delay)")
    parser.add_argument("--openai-kind", choices=fake_openai.KINDS, default="vllm",
                        help="which server /v1 answers like (default vllm)")
    parser.add_argument("--report-version", help="what /api/version reports (e.g. 0.0.0, a source build)")
    parser.add_argument("--embed-fault", choices=EMBED_FAULTS, help="break every /api/embed reply this way")
    parser.add_argument("--chat-fault", choices=CHAT_FAULTS, help="break every answer this way")
    parser.add_argument("--load-delay", type=float, default=0.0, help="seconds a model's first request waits")
    parser.add_argument("--huge-reply", type=int, default=None, help="answers are valid JSON of this many characters")
    parser.add_argument("--wire-fault", choices=WIRE_FAULTS, help="answers misbehave on the wire this way")
    parser.add_argument("--huge-bytes", type=int, default=300_000_000, help="with --wire-fault huge: bytes sent")
    parser.add_argument("--rule", metavar="MODULE:NAME[()]",
                        help="the chat rule (default: overlap_rule); with () the named factory is called once to "
                             "make it, e.g. tests.support.draft_rules:draft_rule, 'tests.support.judge_rules:"
                             "judge_rule()'")
    args = parser.parse_args(argv)
    server = FakeOllama(args.port, delay_s=args.delay, slots=args.slots).start()
    server.version = args.report_version or server.version
    server.embed_fault, server.chat_fault, server.load_delay_s = args.embed_fault, args.chat_fault, args.load_delay
    server.huge_reply_chars = args.huge_reply
    server.wire_fault, server.huge_bytes = args.wire_fault, args.huge_bytes
    server.embed_delay_s, server.openai.kind = args.embed_delay, args.openai_kind
    if args.rule:
        server.chat_rule = _named_rule(args.rule)
    print(f"fake_ollama: rule-based stand-in for Ollama, not a model (OpenAI-compatible too: --backend openai "
          f"--host {server.url}/v1); export OLLAMA_HOST={server.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()


if __name__ == "__main__":
    main()
