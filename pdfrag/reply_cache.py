"""A content-addressed cache of chat replies, so a sweep never asks the model the same thing twice.

The key is the SHA-256 of everything that decides a reply: the model digest (the weights, template and parameters
Ollama serves), the SHA-256 of the rendered prompt (template + question + ordered passages), every option sent
(num_ctx, num_predict, seed, temperature), the think value, the `format` schema, and the repeat index, so three
repeats are three distinct calls. The entry stores the reply as the server sent it, with its original latency and
token usage, so a cached cell reports the timings it really had. Checking the reply (JSON, quotes) is not cached:
it reruns on every use.

Entries live under `<cache dir>/answers/<2 hex>/<key>.json`, written atomically through folders opened without
following links. A damaged, foreign or mis-shaped entry reads as missing, and so does one whose reply does not
match the digest it carries (`reply_sha256`); a reply with non-finite numbers or more than `MAX_REPLY_CHARS` of
text is never stored. A cache folder that cannot be written (read-only, full, a link in place of a subfolder) is
read but not written: `problem` says why, once, and answering goes on uncached. A reply served from the cache
carries `cached=True` (rows show it as `usage.cached`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from .errors import InputError
from .model_server import ChatReply
from .safe_files import UnsafeFile, atomic_write_text, cache_root, read_bytes

__all__ = ["ANSWER_CACHE_FORMAT", "MAX_REPLY_CHARS", "AnswerCache", "reply_key", "reply_problem"]

ANSWER_CACHE_FORMAT = 1
MAX_REPLY_CHARS = 1_000_000  # content + thinking; a reply this long is a runaway generation, not an answer
_KEY_VERSION = "pdf-rag-eval answer cache 1"  # in every key: a new key layout never reads old entries
_TEXT = ("content", "thinking")
_COUNTS = ("prompt_tokens", "output_tokens", "retries")
_TIMES = ("total_ms", "load_ms", "prompt_eval_ms", "eval_ms")
_STORED = frozenset(f.name for f in fields(ChatReply)) - {"cached"}  # whether it came from here is not stored


def reply_key(*, model_digest: str, prompt: str, options: Mapping[str, Any], think: bool | str | None,
               format: dict | str | None, repeat: int) -> str:
    """The cache key (64 hex characters) of one chat call. Numbers in `options` count by value, so
    `temperature = 0` and `0.0` share a key; `think=None` (the server decides) differs from True and False."""
    if not model_digest:
        raise InputError("cannot key a cached answer without the model's digest")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0:
        raise InputError(f"the repeat index must be a whole number from 0, got {repeat!r}")
    parts = {"v": _KEY_VERSION, "digest": model_digest,
             "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
             "options": {k: _by_value(v) for k, v in options.items()}, "think": think, "format": format,
             "repeat": repeat}
    text = json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _by_value(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


class AnswerCache:
    """Chat replies by `reply_key`. Safe to share between threads of one process and between processes."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._lock = threading.Lock()  # atomic_write_text's temp name is per process, not per thread
        self.problem: str | None = None  # set when the folder cannot be written: reads go on, writes stop
        self.discarded = 0  # entries that failed their digest, read as missing

    def check_writable(self) -> str | None:
        """Why new entries cannot be stored (the folder cannot be made or written), else None; checked by
        writing and removing a probe file, so a run can warn before any work."""
        probe = self.root / f".probe.{os.getpid()}.{threading.get_ident()}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_text(probe, "")
            probe.unlink()
        except (OSError, UnsafeFile) as exc:
            self._disable(exc)
        return self.problem

    def _disable(self, exc: Exception) -> None:
        if self.problem is None:
            why = getattr(exc, "strerror", None) or exc
            self.problem = (f"the answer cache {self.root} cannot be written ({why}); answers are read from it but "
                            "new ones are not stored. Fix its permissions or pass --cache-dir")

    @classmethod
    def default(cls, cache_dir: str | Path | None = None) -> AnswerCache:
        """`answers/` under the cache folder (`--cache-dir`, else $PDF_RAG_EVAL_CACHE, ...; see `cache_root`)."""
        return cls(cache_root(cache_dir) / "answers")

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ChatReply | None:
        """The stored reply, or None when missing, unreadable, or not a valid entry for this key; an entry whose
        reply does not match its own digest (`reply_sha256`: edited by hand or damaged) is counted in `discarded`
        and read as missing, so it is asked again and rewritten. An entry from before the digest is read as it is
        (asking every stored reply again would cost a sweep its hours)."""
        try:
            entry = json.loads(read_bytes(self._path(key), below=self.root).decode("utf-8"))
        except (OSError, ValueError, UnsafeFile):
            return None
        if not isinstance(entry, dict) or entry.get("format") != ANSWER_CACHE_FORMAT or entry.get("key") != key:
            return None
        reply = entry.get("reply")
        if not isinstance(reply, dict) or set(reply) != _STORED or reply_problem(reply):
            return None
        if "reply_sha256" in entry and entry["reply_sha256"] != _digest(reply):
            with self._lock:
                self.discarded += 1
            return None
        return ChatReply(**reply, cached=True)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def put(self, key: str, reply: ChatReply, *, about: Mapping[str, Any] | None = None) -> bool:
        """Store `reply` under `key`; False (nothing written) when the reply is unfit to keep. `about` is kept
        beside it for people reading the cache (e.g. model name, prompt SHA-256); it is not part of the key."""
        data = {k: v for k, v in asdict(reply).items() if k in _STORED}
        if reply_problem(data) or self.problem is not None:
            return False
        entry = {"format": ANSWER_CACHE_FORMAT, "key": key, "about": dict(about or {}), "reply": data,
                 "reply_sha256": _digest(data)}
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False, default=str) + "\n"
        with self._lock:
            try:  # its folders are opened without following links: a planted link is refused, not written through
                atomic_write_text(self._path(key), text, below=self.root)
            except (OSError, UnsafeFile) as exc:  # read-only, full or a link: this answer stands, just not kept
                self._disable(exc)
                return False
        return True


def _digest(reply: Mapping[str, Any]) -> str:
    text = json.dumps(reply, sort_keys=True, ensure_ascii=False, allow_nan=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reply_problem(data: Mapping[str, Any]) -> str | None:
    """Why a reply (as a dict of ChatReply fields) must not be cached, or None when it may."""
    if not all(isinstance(data.get(k), str) for k in _TEXT):
        return "content and thinking must be text"
    if sum(len(data[k]) for k in _TEXT) > MAX_REPLY_CHARS:
        return f"the reply is longer than {MAX_REPLY_CHARS} characters"
    if data.get("done_reason") is not None and not isinstance(data.get("done_reason"), str):
        return "done_reason must be text"
    for name in _COUNTS:
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return f"{name} must be a whole number from 0"
    for name in _TIMES:
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            return f"{name} must be a finite number of milliseconds from 0"
    return None
