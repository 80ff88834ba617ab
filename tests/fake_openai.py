"""The OpenAI-compatible side of the test server (tests/fake_ollama.py): ``/v1/models``, ``/v1/chat/completions``,
``/v1/embeddings`` and the identity endpoints beside them, in the dialects real servers speak. **Not a
model**: chat replies come from the same rule as ``/api/chat`` (``FakeOllama.chat_rule``), embeddings are the same
hashed bag of words, token counts are whitespace tokens, so a run through either API gets the same answers.

``Dialect`` (``FakeOllama.openai``) picks what differs between servers:

- ``kind``: ``vllm`` (``GET /version``; ``/v1/models`` with ``root`` and ``max_model_len``; context errors "This
  model's maximum context length is N tokens…" counting prompt + max_tokens), ``llama.cpp`` (``GET /props`` with
  ``build_info``, ``model_path`` and ``default_generation_settings.n_ctx``; ``meta.n_ctx`` in ``/v1/models``;
  400 ``exceed_context_size_error`` counting the prompt only; ``timings`` in replies) or ``ollama`` (Ollama's
  ``/v1``: bare model entries, an over-long prompt is cut silently, ``reasoning_effort: none`` turns thinking off).
- ``reasoning``: where thinking goes: ``reasoning`` (vLLM 0.16+, Ollama), ``reasoning_content`` (vLLM <= 0.11,
  llama.cpp, SGLang), ``both`` (vLLM 0.11.1-0.14), ``think_tags`` (no reasoning parser: ``<think>…</think>`` in
  the content).
- ``usage``: whether replies carry ``usage``; ``json_schema``: False refuses ``response_format`` of type
  ``json_schema`` with llama.cpp's 400 (older servers know only ``json_object`` + ``schema``); ``string_errors``:
  error bodies as ``{"error": "<text>"}`` (LM Studio).

A chat rule's ``ChatReply`` with ``done_reason="refusal"`` is sent as a refusal (``content: null``, the text in
``refusal``), one with ``done_reason="tool_calls"`` as a tool call (its content as the call's arguments).

A model thinks when it reports the ``thinking`` capability and the request does not switch it off
(``chat_template_kwargs.enable_thinking: false``; on the ``ollama`` kind ``reasoning_effort: "none"``).
``FakeOllama.fail_next(429, retry_after=S, path="/v1/chat/completions")`` answers 429 with ``Retry-After: S``.
The ``llama.cpp`` kind counts a chat body's tokens at ``/v1/chat/completions/input_tokens`` (unless
``counts_tokens`` is False; ``FakeOllama.token_counts`` counts those calls), answers 501 to embeddings with a
model that lacks the ``embedding`` capability, as llama-server started without ``--embeddings`` does, and, with
``ubatch`` set (llama-server's ``-ub``), refuses an embedding input longer than it with HTTP 500 "input (N tokens) is
too large to process. increase the physical batch size (current batch size: U)", whatever the context.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fake_ollama import FakeOllama

__all__ = ["Dialect", "KINDS", "REASONING", "OpenAIError", "route"]

KINDS = ("vllm", "llama.cpp", "ollama")
# How /v1/embeddings numbers its items: in order; reversed list with true indexes; none at all; or broken: one
# missing, a string, every item 0, a duplicate.
INDEXES = ("ordered", "reversed", "none", "missing", "string", "all_zero", "duplicate")
REASONING = ("reasoning", "reasoning_content", "both", "think_tags")
_TYPES = {400: "BadRequestError", 404: "NotFoundError", 429: "RateLimitError", 503: "ServiceUnavailableError"}


@dataclass
class Dialect:
    kind: str = "vllm"
    reasoning: str = "reasoning"
    usage: bool = True
    json_schema: bool = True
    string_errors: bool = False
    version: str = "0.11.2"  # vLLM's /version; llama.cpp's build_info is b<N>-<commit>
    build_info: str = "b6502-0c1e5709"
    index: str = "ordered"  # embedding items' `index`: one of INDEXES
    counts_tokens: bool = True  # llama.cpp's POST /v1/chat/completions/input_tokens (a build without it: 404)
    # llama.cpp's physical batch (-ub): an embedding input longer than it is refused with HTTP 500, whatever the
    # context; None: no such limit (the default 512 would refuse the tests' long chunks, which the context covers)
    ubatch: int | None = None


class OpenAIError(Exception):
    """An error answered in the OpenAI shape; ``extra`` goes into the error object (llama.cpp's token counts)."""

    def __init__(self, status: int, message: str, *, type_: str | None = None, **extra: Any):
        super().__init__(message)
        self.status, self.type, self.extra = status, type_ or _TYPES.get(status, "InternalServerError"), extra

    def body(self, dialect: Dialect) -> dict:
        if dialect.string_errors:
            return {"error": str(self)}
        return {"error": {"message": str(self), "type": self.type, "param": None, "code": self.status, **self.extra}}


def route(fake: FakeOllama, method: str, path: str, body: Any, broken: str | None = None) -> Any:
    """The reply to an OpenAI-side request: a dict (JSON), bytes (sent as text), or None when no such path.
    ``broken`` is a fault of ``break_next`` (CHAT_FAULTS / EMBED_FAULTS) for this request."""
    d = fake.openai
    if method == "GET" and path == "/version" and d.kind == "vllm":
        return {"version": d.version}
    if method == "GET" and path == "/props" and d.kind == "llama.cpp":
        return _props(fake)
    if method == "GET" and path == "/v1/models":
        return {"object": "list", "data": [_model_entry(fake, key, spec) for key, spec in list(fake.models.items())]}
    if method == "POST" and path == "/v1/chat/completions/input_tokens" and d.kind == "llama.cpp" and d.counts_tokens:
        fake.token_counts += 1
        messages = body.get("messages") if isinstance(body, dict) else None
        return {"object": "response.input_tokens",
                "input_tokens": sum(_tokens(str(m.get("content") or "")) for m in messages or [])}
    if method == "POST" and path in ("/v1/chat/completions", "/v1/embeddings"):
        if not isinstance(body, dict):
            raise OpenAIError(400, "invalid JSON request body")
        return chat(fake, body, broken) if path.endswith("completions") else embeddings(fake, body, broken)
    return None


def served_id(key: str) -> str:
    """vLLM-style servers list a served name (no ``:latest``); Ollama lists its canonical tag."""
    return key[:-len(":latest")] if key.endswith(":latest") else key


def _model_entry(fake: FakeOllama, key: str, spec: Any) -> dict:
    d = fake.openai
    entry = {"id": served_id(key) if d.kind != "ollama" else key, "object": "model", "created": 1748761200,
             "owned_by": {"vllm": "vllm", "llama.cpp": "llamacpp", "ollama": "library"}[d.kind]}
    if d.kind == "vllm":
        entry |= {"root": f"/models/{served_id(key)}", "parent": None, "max_model_len": spec.context_length}
    elif d.kind == "llama.cpp":
        entry |= {"aliases": [served_id(key)],
                  "meta": {"n_ctx": spec.context_length, "n_ctx_train": spec.context_length,
                           "n_embd": spec.embedding_length, "n_params": 4_000_000_000, "size": spec.size}}
    return entry


def _props(fake: FakeOllama) -> dict:
    first = next(s for s in fake.models.values() if "completion" in s.capabilities)  # llama.cpp serves one model
    slots = fake.slots or 4  # the context is shared: each slot gets n_ctx / slots (-c / -np)
    return {"build_info": fake.openai.build_info, "model_path": "/models/model.gguf", "model_alias": "",
            "total_slots": slots, "default_generation_settings": {"n_ctx": first.context_length // slots}}


def _find(fake: FakeOllama, body: dict) -> tuple[str, Any]:
    from tests.fake_ollama import _canonical
    name = body.get("model") or ""
    for key, spec in list(fake.models.items()):
        if name in (key, served_id(key)) or (fake.openai.kind == "ollama" and _canonical(key) == _canonical(name)):
            return key, spec
    if fake.openai.kind == "ollama":
        raise OpenAIError(404, f'model "{name}" not found, try pulling it first', type_="not_found_error")
    raise OpenAIError(404, f"The model `{name}` does not exist.")


def _tokens(text: str) -> int:
    return len(text.split())


def _check_format(d: Dialect, body: dict) -> None:
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return
    if fmt.get("type") == "json_schema":
        if not d.json_schema:
            raise OpenAIError(400, 'response_format type must be one of "text" or "json_object", but got: '
                                   "json_schema", type_="invalid_request_error")
        if "name" not in (fmt.get("json_schema") or {}):
            raise OpenAIError(400, "1 validation error: response_format.json_schema.name Field required")


def _check_context(d: Dialect, prompt: int, budget: int, limit: int) -> None:
    """Each server's wording of "too long"; Ollama's /v1 cuts silently instead."""
    if d.kind == "vllm" and prompt + budget > limit:
        raise OpenAIError(400, f"This model's maximum context length is {limit} tokens. However, you requested "
                               f"{budget} output tokens and your prompt contains {prompt} input tokens, for a total "
                               f"of {prompt + budget} tokens. Please reduce the length of the input prompt or the "
                               "number of requested output tokens.")
    if d.kind == "llama.cpp" and prompt > limit:
        raise OpenAIError(400, f"request ({prompt} tokens) exceeds the available context size ({limit} tokens), try "
                               "increasing it", type_="exceed_context_size_error", n_prompt_tokens=prompt, n_ctx=limit)


def _thinks(d: Dialect, body: dict, spec: Any) -> bool:
    kwargs = body.get("chat_template_kwargs") or {}
    off = kwargs.get("enable_thinking") is False if d.kind != "ollama" else body.get("reasoning_effort") == "none"
    return "thinking" in spec.capabilities and not off


def chat(fake: FakeOllama, body: dict, broken: str | None = None) -> Any:
    d = fake.openai
    key, spec = _find(fake, body)
    if "completion" not in spec.capabilities:
        raise OpenAIError(400, f"{body['model']} does not support chat completions")
    _check_format(d, body)
    prompt = sum(_tokens(str(m.get("content") or "")) for m in body.get("messages") or [])
    budget = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    _check_context(d, prompt, budget, spec.context_length)
    fake._load(key)
    broken = broken or fake.chat_fault
    if broken == "not_json":
        return b"upstream connect error or disconnect/reset before headers"
    if broken == "envelope":
        return {"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": "a completions reply"}]}
    think = _thinks(d, body, spec)
    # the rule sees the request as on /api/chat: the schema as `format`, the budget as `options.num_predict`
    rule_body = {**body, "options": {"num_predict": budget or None}, "format": _schema(body.get("response_format"))}
    reply = fake._answer_chat(rule_body, think)
    message, finish = _message(d, reply.content, reply.thinking), reply.done_reason
    if finish in _NOT_CONTENT:  # the rule's content goes where such a server puts it, not into `content`
        message, finish = _NOT_CONTENT[finish](reply.content), ("tool_calls" if finish == "tool_calls" else "stop")
    out = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
           "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
           "system_fingerprint": {"vllm": f"vllm-{d.version}-fake0001", "llama.cpp": d.build_info,
                                  "ollama": "fp_ollama"}[d.kind]}
    completion = _tokens(reply.content) + _tokens(reply.thinking or "")
    if d.usage:
        out["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if d.kind == "llama.cpp":
        out["timings"] = {"prompt_n": prompt, "prompt_ms": prompt * 0.001, "predicted_n": completion,
                          "predicted_ms": max(completion, 1) * 0.001}
    return out


# A chat rule's done_reason "refusal" or "tool_calls": a reply whose `content` is null and whose text is a refusal,
# or a tool call (arguments = the rule's content), as OpenAI-compatible servers send them.
_NOT_CONTENT = {
    "refusal": lambda text: {"role": "assistant", "content": None, "refusal": text},
    "tool_calls": lambda text: {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": text}}]},
}


def _schema(fmt: Any) -> dict | None:
    if not isinstance(fmt, dict):
        return None
    return (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else fmt.get("schema")


def _message(d: Dialect, content: str, thinking: str | None) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": []}
    if not thinking:
        return message
    if d.reasoning == "think_tags":
        message["content"] = f"<think>\n{thinking}\n</think>\n\n{content}"
    elif d.reasoning == "both":
        message |= {"reasoning": thinking, "reasoning_content": thinking}
    else:
        message[d.reasoning] = thinking
    return message


def embeddings(fake: FakeOllama, body: dict, fault: str | None = None) -> Any:
    from tests.fake_ollama import _break_embeddings, _cut_tokens, _normalise, _Raw, lexical_embedding
    d = fake.openai
    key, spec = _find(fake, body)
    if d.kind == "llama.cpp" and "embedding" not in spec.capabilities:  # a server started without --embeddings
        raise OpenAIError(501, "This server does not support embeddings. Start it with `--embeddings`",
                          type_="not_supported_error")
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else None
    if not texts or not all(isinstance(t, str) and t for t in texts):
        raise OpenAIError(400, "Input content cannot be empty" if texts == [] or texts else "invalid input type")
    fake._sleep(fake.embed_delay_s)
    longest = max(map(_tokens, texts))
    if d.kind == "llama.cpp" and d.ubatch is not None and longest > d.ubatch:
        raise OpenAIError(500, f"input ({longest} tokens) is too large to process. increase the physical batch size "
                               f"(current batch size: {d.ubatch})", type_="server_error")
    if d.kind != "ollama" and longest > spec.context_length:
        _check_context(d, longest, 0, spec.context_length)
    texts = [_cut_tokens(t, spec.context_length) for t in texts]
    vectors = [_normalise(lexical_embedding(t, spec.embedding_length)) for t in texts]
    fault = fault or fake.embed_fault
    if fault == "envelope":  # another API's shape: Ollama's
        return {"model": body["model"], "embeddings": vectors}
    if fault:
        broken = _break_embeddings(vectors, fault)
        if isinstance(broken, _Raw):
            return bytes(broken)
        vectors = broken["embeddings"]
    data = _numbered([{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)], d.index)
    tokens = sum(map(_tokens, texts))
    return {"object": "list", "data": data, "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}



def _numbered(items: list[dict], how: str) -> list[dict]:
    """The embedding items as the dialect numbers them (INDEXES)."""
    if how == "reversed":
        return items[::-1]
    if how == "none":
        return [{k: v for k, v in item.items() if k != "index"} for item in items]
    if how == "missing":
        return [items[0] | {}] + [{k: v for k, v in item.items() if k != "index"} for item in items[1:]]
    if how == "string":
        return [item | {"index": str(item["index"])} for item in items]
    if how == "all_zero":
        return [item | {"index": 0} for item in items]
    if how == "duplicate":
        return [item | {"index": min(item["index"], len(items) - 2)} for item in items]
    return items
