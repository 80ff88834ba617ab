"""Requests to the chat model for drafting, and the reply cache that makes a rerun free.

Three prompts (harness/prompts/): `draft.txt` (one call per page: a list of drafts), `parametric.txt` (the
question alone, no page), `unanswerable.txt` (one call per unanswerable draft). Each goes out as one /api/chat
call with a JSON Schema `format`, temperature 0 and a fixed seed. Replies that parse and match the schema are
cached by (model digest, prompt template SHA-256, SHA-256 of the variable text, request options): a rerun over
unchanged pages makes no chat call. Failures are not cached, so a rerun tries them again.
"""

from __future__ import annotations

import hashlib
import json
import os
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from chatbot.answer import split_thinking
from chatbot.errors import ModelServerError
from chatbot.model_server import ChatReply, ModelServer

from .records import TYPES


def drafts_schema(per_page: int) -> dict:
    """The `format` of a page call: exactly `per_page` drafts of {question, quote, facts, type}."""
    item = {"type": "object",
            "properties": {"question": {"type": "string"}, "quote": {"type": "string"},
                           "facts": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                           "type": {"enum": [t for t in TYPES if t != "unanswerable"]}},
            "required": ["question", "quote", "facts", "type"]}
    return {"type": "object",
            "properties": {"drafts": {"type": "array", "items": item, "minItems": 1, "maxItems": per_page}},
            "required": ["drafts"]}


PARAMETRIC_SCHEMA: dict = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
UNANSWERABLE_SCHEMA: dict = {"type": "object",
                             "properties": {"question": {"type": "string"}, "original": {"type": "string"},
                                            "changed": {"type": "string"}},
                             "required": ["question", "original", "changed"]}


@dataclass(frozen=True)
class Template:
    """A bundled prompt: `string.Template` text and its SHA-256 (recorded on every draft)."""

    name: str
    text: str

    @classmethod
    def bundled(cls, name: str) -> Template:
        return cls(name, resources.files("harness").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8"))

    @property
    def sha256(self) -> str:
        return sha256(self.text)

    def render(self, **values: Any) -> str:
        return string.Template(self.text).substitute(**{k: str(v) for k, v in values.items()})


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatOptions:
    """Sampling and budget for drafting calls; `think` None = on for models with the thinking capability."""

    model: str
    seed: int = 42
    temperature: float = 0.0
    num_ctx: int = 8192
    num_predict: int = 4096
    think: bool | None = None

    def options(self) -> dict:
        return {"temperature": self.temperature, "seed": self.seed, "num_ctx": self.num_ctx,
                "num_predict": self.num_predict}


class ReplyCache:
    """Parsed replies as small JSON files: `<root>/<key[:2]>/<key>.json`. A damaged file is a miss."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @staticmethod
    def key(digest: str, template_sha256: str, text: str, options: dict, schema: dict) -> str:
        parts = (digest, template_sha256, sha256(text), json.dumps(options, sort_keys=True),
                 json.dumps(schema, sort_keys=True))
        return sha256("\0".join(parts))

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))["reply"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, reply: Any) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"reply": reply}, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)


@dataclass(frozen=True)
class Replied:
    """A request that produced JSON matching its schema. `from_cache` when no call was made."""

    reply: Any  # the parsed JSON; an object for every bundled schema
    from_cache: bool = False


@dataclass(frozen=True)
class Failed:
    """A request that failed, and why."""

    error: str

    @property
    def from_cache(self) -> bool:
        return False  # failures are never cached, so a rerun asks again


Outcome = Replied | Failed  # one request's result


# Ollama cuts an over-long prompt silently; the same conservative estimate as the answer path catches that.
_CHARS_PER_TOKEN = 3


class Asker:
    """Sends prompts through the model-server seam and caches what parses. Never raises for one request's
    failure (a timeout, a malformed reply, a server gone away): it becomes a `Failed` outcome. The judge's asker
    is this one with its own cache (`harness.judge.asking`)."""

    def __init__(self, client: ModelServer, options: ChatOptions, digest: str, capabilities: tuple[str, ...],
                 cache: ReplyCache | None):
        self.client, self.chat, self.digest, self.cache = client, options, digest, cache
        self.think = options.think if options.think is not None else (True if "thinking" in capabilities else None)
        self.chat_calls = 0

    def ask(self, template: Template, schema: dict, **values: Any) -> Outcome:
        prompt = template.render(**values)
        key = ReplyCache.key(self.digest, template.sha256, prompt, self.chat.options() | {"think": self.think},
                             schema)
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            return Replied(cached, from_cache=True)
        outcome, _ = self.request(prompt, schema)
        if isinstance(outcome, Replied) and self.cache is not None:
            self.cache.put(key, outcome.reply)
        return outcome

    def request(self, prompt: str, schema: dict) -> tuple[Outcome, ChatReply | None]:
        """One chat call with `schema` as its format, after checking the prompt fits: the outcome, and the raw
        reply when one came. With thinking the server writes up to num_predict twice (thinking, then the answer:
        shared/ollama-api.md §10), so the budget is the prompt plus twice num_predict."""
        estimate = len(prompt) // _CHARS_PER_TOKEN
        thinks = bool(self.think)
        if estimate + self.chat.num_predict * (2 if thinks else 1) > self.chat.num_ctx:
            reserve = (f"2 x num_predict={self.chat.num_predict} (thinking, then the answer)" if thinks
                       else f"num_predict={self.chat.num_predict}")
            return Failed(f"the prompt (~{estimate} tokens) plus {reserve} may exceed num_ctx={self.chat.num_ctx}; "
                          "raise --num-ctx or lower --num-predict"), None
        self.chat_calls += 1
        try:
            reply = self.client.chat(self.chat.model, [{"role": "user", "content": prompt}], format=schema,
                                     options=self.chat.options(), think=self.think)
        except ModelServerError as exc:  # timeouts, server errors, a server gone away: this request only
            return Failed(f"{type(exc).__name__}: {exc}"), None
        if reply.done_reason == "length":
            return Failed(f"reply cut off at num_predict={self.chat.num_predict} (done_reason: length); raise "
                          "--num-predict"), reply
        return parse_reply(split_thinking(reply.content)[0], schema), reply


def parse_reply(content: str, schema: dict) -> Outcome:
    """`Replied` with the parsed JSON when `content` is JSON matching `schema`, else `Failed` saying what is
    wrong."""
    try:
        parsed = json.loads(content)
    except json.JSONDecodeError as exc:
        return Failed(f"malformed output: reply is not JSON ({exc.msg} at character {exc.pos})")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(parsed))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "top level"
        return Failed(f"malformed output: reply does not match the schema at {where}: {error.message}")
    return Replied(parsed)
