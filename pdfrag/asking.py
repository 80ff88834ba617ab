"""Asking a model with a prompt template: the one way the answer path, drafting and the judge do it.

- `PromptTemplate`: `string.Template` text with its source and SHA-256; bundled with a package or read from a
  file, checked for the variables its use needs, rendered with an `InputError` naming a broken placeholder.
- `over_budget`: the context check. A server cuts an over-long prompt silently (Ollama keeps its start), so the
  prompt plus the reply budget must fit the window: the prompt's tokens as the server counts them where it can
  (llama.cpp), else an estimate (3 characters a token, which undercounts digits, code and non-Latin text: the
  server may still refuse such a prompt, and that refusal names the window too). With thinking, the server writes
  up to num_predict twice (thinking, then the answer, each with its own budget).
- `read_reply`: a reply's text read against its JSON Schema: `Replied` with the parsed JSON, or `Failed` saying
  what is wrong. `split_thinking` drops a `<think>` block that leaked into the content.
- `Asker`: renders a template, checks the prompt fits, sends one chat call with the schema as the structured-output
  format through the model-server seam (whose clients retry), reads the reply, and keeps what parses in a
  `ReplyStore`. One request's failure (a timeout, a cut or malformed reply, a server gone away) is a `Failed`
  outcome, never an exception. The store decides how replies are keyed and kept: drafting's `ParsedReplies`
  here, the judge's store beside the answer cache (`harness/judge/asking.py`); keys are a file format.
"""

from __future__ import annotations

import hashlib
import json
import os
import string
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import jsonschema

from .bounded_http import NestedTooDeep, json_body
from .errors import InputError, InputTooLong, ModelServerError
from .model_server import ChatReply, ModelServer
from .safe_files import UnsafeFile, atomic_write_text, read_bytes
from .text import clip

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_NUM_PREDICT", "ERROR_CHARS", "LONGER_WINDOW", "Asker", "ChatOptions", "Failed",
           "KeyLocks", "Outcome", "ParsedReplies", "PromptTemplate", "Replied", "ReplyStore", "count_tokens",
           "default_num_predict", "over_budget", "read_reply", "refused_by_window", "sha256", "split_thinking",
           "window_advice"]

CHARS_PER_TOKEN = 3  # where the server cannot count: English prose is 3.5-4.5 characters a token, digits 1
DEFAULT_NUM_PREDICT = 4096
ERROR_CHARS = 1_000  # what a Failed outcome keeps of a message that quotes the reply


def default_num_predict(window: int | None, *, thinks: bool) -> int:
    """The reply budget when --num-predict is not given. Where we set the context (Ollama's num_ctx): 4096. Where
    the server decides it (an OpenAI-compatible server, `window` its per-slot window in tokens): a quarter of the
    window, an eighth for a model that thinks (thinking and answer each get the budget), at most 4096 and at least
    256, so that the prompt has the rest (a 4096-token llama.cpp slot: 1024)."""
    if window is None:
        return DEFAULT_NUM_PREDICT
    return max(256, min(DEFAULT_NUM_PREDICT, window // (8 if thinks else 4)))


LONGER_WINDOW = "give the server a longer window (llama.cpp: a larger -c or fewer -np slots; vLLM: --max-model-len)"


def window_advice(window: int) -> str:
    """What to change when a prompt and its reply may not fit a server's window: the server's window first (it
    leaves what is evaluated as it is), then our flags."""
    return f"the server's context window of {window} tokens; {LONGER_WINDOW}, or lower --num-predict, --top-k or " \
           "--chunk-size"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt template (`string.Template` syntax; `$$` is a literal $) and where it came from."""

    text: str
    source: str

    @classmethod
    def bundled(cls, package: str, name: str) -> PromptTemplate:
        """`<package>/prompts/<name>.txt`, shipped with the package."""
        where = f"prompts/{name}.txt"
        return cls(resources.files(package).joinpath(where).read_text(encoding="utf-8"), f"{package}/{where}")

    @classmethod
    def read(cls, path: str | Path) -> PromptTemplate:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise InputError(f"{path}: cannot read the prompt template ({why})") from None
        return cls(text, os.path.abspath(path))  # recorded in manifests: a relative path names nothing later

    @property
    def variables(self) -> set[str]:
        found = {m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(self.text)}
        return found - {None}

    def require(self, names: Iterable[str], *, exact: bool = False) -> PromptTemplate:
        """This template, when it uses every one of `names` (and, `exact`, nothing else); else InputError."""
        wanted = list(names)
        missing = sorted(set(wanted) - self.variables)
        unknown = sorted(self.variables - set(wanted)) if exact else []
        if missing or unknown:
            listed = " and ".join([", ".join(f"${n}" for n in wanted[:-1]), f"${wanted[-1]}"] if len(wanted) > 1
                                  else [f"${wanted[0]}"])
            found = "; ".join(f"{what}: {', '.join(f'${n}' for n in names)}"
                              for what, names in (("missing", missing), ("unknown", unknown)) if names)
            raise InputError(f"{self.source}: the prompt template must use {listed}"
                             f"{' and nothing else' if exact else ''} ({found}); write $$ for a literal $")
        return self

    @property
    def sha256(self) -> str:
        return sha256(self.text)

    def render(self, **values: Any) -> str:
        try:
            return string.Template(self.text).substitute(**{k: str(v) for k, v in values.items()})
        except (KeyError, ValueError) as exc:
            raise InputError(f"{self.source}: the template has an unknown or broken $ placeholder ({exc}); write "
                             "$$ for a literal $") from None


def over_budget(prompt: str, *, num_predict: int, window: int, thinks: bool, tokens: int | None = None) -> str | None:
    """None when the prompt plus the reply budget fits `window` tokens; else the start of the message saying it may
    not ("the prompt (~N tokens) plus num_predict=M may exceed"), for the caller to finish with the window's name
    and what to change. `tokens` is the prompt's count by the server's tokenizer, when it gave one; else the
    count is estimated from the characters."""
    counted = tokens if tokens is not None else len(prompt) // CHARS_PER_TOKEN
    if counted + (2 if thinks else 1) * num_predict <= window:
        return None
    reserve = (f"2 x num_predict={num_predict} (thinking, then the answer)" if thinks
               else f"num_predict={num_predict}")
    size = f"{counted} tokens, counted by the server" if tokens is not None else f"~{counted} tokens"
    return f"the prompt ({size}) plus {reserve} {'exceeds' if tokens is not None else 'may exceed'}"


def count_tokens(client: Any, model: str, prompt: str) -> int | None:
    """The tokens of `prompt` sent as one user message, as `client`'s server counts them (a client may offer
    `count_tokens(model, messages)`: OpenAIClient on llama.cpp); None where it cannot tell."""
    count = getattr(client, "count_tokens", None)
    return count(model, [{"role": "user", "content": prompt}]) if callable(count) else None


def refused_by_window(exc: Exception, num_predict: int) -> str:
    """The start of the message for a prompt the server refused as too long after our check let it through (the
    estimate undercounted), for the caller to finish with `window_advice`, as `over_budget`'s."""
    said = f'"{exc.server_said}"' if isinstance(exc, InputTooLong) and exc.server_said else f"({exc})"
    return f"the server refused the prompt as too long: {said}; the prompt plus num_predict={num_predict} exceeds"


def split_thinking(content: str) -> tuple[str, str]:
    """(content, leaked thinking): if a `</think>` leaked into the content, keep only what follows the last one."""
    head, sep, tail = content.rpartition("</think>")
    if not sep:
        return content, ""
    return tail, head.replace("<think>", "").replace("</think>", "")


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


def read_reply(content: str, schema: dict | jsonschema.protocols.Validator, *,
               schema_name: str = "schema") -> Outcome:
    """`Replied` with the parsed JSON when `content` is JSON matching `schema` (a schema, or a validator built
    once), else `Failed`: "reply is not JSON (...)" or "reply does not match the <schema_name> at <path>: ..."."""
    try:
        parsed = json_body(content)
    except json.JSONDecodeError as exc:
        return Failed(f"reply is not JSON ({exc.msg} at character {exc.pos})")
    except NestedTooDeep:
        return Failed("reply is JSON nested too deeply to read (over about 1,000 levels)")
    validator = jsonschema.Draft202012Validator(schema) if isinstance(schema, dict) else schema
    error = jsonschema.exceptions.best_match(validator.iter_errors(parsed))
    if error is not None:  # the message repeats the offending value, which may be a runaway reply's whole text
        where = clip("/".join(str(p) for p in error.absolute_path) or "top level", 200)
        return Failed(clip(f"reply does not match the {schema_name} at {where}: {error.message}", ERROR_CHARS))
    return Replied(parsed)


def _malformed(outcome: Outcome) -> Outcome:
    return Failed(f"malformed output: {outcome.error}") if isinstance(outcome, Failed) else outcome


class KeyLocks:
    """One lock per cache key, so that concurrent askers of one key wait for a single request and then read its
    cached result (two cells of a sweep asking the same prompt, two repeats embedding the same question)."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock_for(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


@dataclass(frozen=True)
class ChatOptions:
    """Sampling and budget of one call; `think` None = on for models with the thinking capability."""

    model: str
    seed: int = 42
    temperature: float = 0.0
    num_ctx: int = 8192
    num_predict: int | None = None  # None: default_num_predict, decided by the asker from the server's window
    think: bool | None = None

    def options(self) -> dict:
        return {"temperature": self.temperature, "seed": self.seed, "num_ctx": self.num_ctx,
                "num_predict": self.num_predict if self.num_predict is not None else DEFAULT_NUM_PREDICT}


class ReplyStore(Protocol):
    """Where an asker keeps the replies that parsed, and how it keys them."""

    def key(self, asker: Asker, template: PromptTemplate, prompt: str, schema: dict) -> str: ...

    def get(self, key: str, schema: dict) -> Replied | None: ...

    def put(self, key: str, asker: Asker, outcome: Replied, reply: ChatReply, prompt: str) -> None: ...


_KEYS = KeyLocks()  # per process: every asker of one key waits for one request


class Asker:
    """Sends prompts through the model-server seam and keeps what parses in `store` (None: no cache). Counts the
    chat calls it made and the replies the store gave. `window` is the context the server decides (an
    OpenAI-compatible server's per-slot window); None where `num_ctx` is sent."""

    def __init__(self, client: ModelServer, options: ChatOptions, digest: str, capabilities: tuple[str, ...],
                 store: ReplyStore | None, *, window: int | None = None):
        self.client, self.digest, self.store, self.window = client, digest, store, window
        self.think = options.think if options.think is not None else (True if "thinking" in capabilities else None)
        budget = options.num_predict or default_num_predict(window, thinks=bool(self.think))
        self.chat = replace(options, num_predict=budget)
        self.chat_calls = 0
        self.from_cache = 0

    def cached(self, template: PromptTemplate, schema: dict, **values: Any) -> bool:
        """Whether the store holds a reply for this request (a dry run's count)."""
        if self.store is None:
            return False
        prompt = template.render(**values)
        return self.store.get(self.store.key(self, template, prompt, schema), schema) is not None

    def ask(self, template: PromptTemplate, schema: dict, **values: Any) -> Outcome:
        """The parsed reply to `template` rendered with `values` (from the store when it holds one), or why there
        is none."""
        prompt = template.render(**values)
        if self.store is None:
            return self.request(prompt, schema)[0]
        key = self.store.key(self, template, prompt, schema)
        with _KEYS.lock_for(key):
            if (cached := self.store.get(key, schema)) is not None:
                self.from_cache += 1
                return cached
            outcome, reply = self.request(prompt, schema)
            if isinstance(outcome, Replied) and reply is not None:
                self.store.put(key, self, outcome, reply, prompt)
            return outcome

    def request(self, prompt: str, schema: dict) -> tuple[Outcome, ChatReply | None]:
        """One chat call with `schema` as its format, after checking the prompt fits: the outcome, and the raw
        reply when one came."""
        budget = self.chat.options()["num_predict"]
        try:
            tokens = count_tokens(self.client, self.chat.model, prompt) if self.window else None
        except ModelServerError as exc:
            return Failed(f"{type(exc).__name__}: {exc}"), None
        problem = over_budget(prompt, num_predict=budget, window=self.window or self.chat.num_ctx,
                              thinks=bool(self.think), tokens=tokens)
        if problem and self.window:
            return Failed(f"{problem} {window_advice(self.window)}"), None
        if problem:
            return Failed(f"{problem} num_ctx={self.chat.num_ctx}; raise --num-ctx or lower --num-predict"), None
        self.chat_calls += 1
        try:
            reply = self.client.chat(self.chat.model, [{"role": "user", "content": prompt}], format=schema,
                                     options=self.chat.options(), think=self.think)
        except InputTooLong as exc:  # the server's own count: our estimate let it through
            if self.window:
                return Failed(f"{refused_by_window(exc, budget)} {window_advice(self.window)}"), None
            return Failed(f"{type(exc).__name__}: {exc}"), None
        except ModelServerError as exc:  # timeouts, server errors, a server gone away: this request only
            return Failed(f"{type(exc).__name__}: {exc}"), None
        if reply.done_reason == "length":
            return Failed(f"reply cut off at num_predict={budget} (done_reason: length); raise "
                          "--num-predict"), reply
        return _malformed(read_reply(split_thinking(reply.content)[0], schema)), reply


class ParsedReplies:
    """Drafting's store: parsed replies as small JSON files, `<root>/<key[:2]>/<key>.json`, keyed by (model digest,
    template SHA-256, SHA-256 of the rendered prompt, options with think, schema). A damaged file, or one whose
    reply does not match its digest (`reply_sha256`; files from before it are read as they are), is a miss."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @staticmethod
    def key_of(digest: str, template_sha256: str, text: str, options: dict, schema: dict) -> str:
        parts = (digest, template_sha256, sha256(text), json.dumps(options, sort_keys=True),
                 json.dumps(schema, sort_keys=True))
        return sha256("\0".join(parts))

    def key(self, asker: Asker, template: PromptTemplate, prompt: str, schema: dict) -> str:
        return self.key_of(asker.digest, template.sha256, prompt, asker.chat.options() | {"think": asker.think},
                           schema)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, schema: dict) -> Replied | None:
        try:
            entry = json.loads(read_bytes(self._path(key), below=self.root).decode("utf-8"))
            if "reply_sha256" in entry and entry["reply_sha256"] != _digest(entry["reply"]):
                return None  # edited by hand or damaged: asked again and rewritten
            return Replied(entry["reply"], from_cache=True)
        except (OSError, ValueError, KeyError, TypeError, UnsafeFile):
            return None

    def put(self, key: str, asker: Asker, outcome: Replied, reply: ChatReply, prompt: str) -> None:
        """Kept atomically through folders opened without following links, with the digest of the reply."""
        entry = {"reply": outcome.reply, "reply_sha256": _digest(outcome.reply)}
        atomic_write_text(self._path(key), json.dumps(entry, ensure_ascii=False), below=self.root)


def _digest(reply: Any) -> str:
    return sha256(json.dumps(reply, sort_keys=True, ensure_ascii=False))
