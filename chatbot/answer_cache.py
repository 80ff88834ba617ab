"""The answer path's cached replies: `CachingGenerator` answers from the reply cache (`pdfrag.reply_cache`: the
key, the entries, what is never stored) when it can and asks the model when not; one key is asked once in a
process."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import replace

from pdfrag.asking import KeyLocks
from pdfrag.errors import InputError
from pdfrag.model_server import ChatReply
from pdfrag.reply_cache import AnswerCache, reply_key

from .answer import AnswerSettings, Generator, answer_schema
from .index import Hit

__all__ = ["CachingGenerator"]


_ANSWER_KEYS = KeyLocks()  # per process: shared by every CachingGenerator, whatever instance asks


class CachingGenerator:
    """A `Generator` that answers from the cache when it can and asks `inner` (and stores the reply) when not.
    One instance per repeat index: `with_repeat(r)` makes the sibling for repeat r over the same cache.
    `hits` and `misses` count calls served from the cache and passed on."""

    def __init__(self, inner: Generator, cache: AnswerCache, repeat: int = 0):
        if not getattr(inner, "digest", ""):
            raise InputError(f"cannot cache answers of {inner.model!r}: the generator reports no model digest")
        self.inner, self.cache, self.repeat = inner, cache, repeat
        self.model, self.digest = inner.model, inner.digest
        self.hits = self.misses = 0
        self._lock = threading.Lock()

    def with_repeat(self, repeat: int) -> CachingGenerator:
        return CachingGenerator(self.inner, self.cache, repeat)

    def key(self, prompt: str, settings: AnswerSettings, hits: Sequence[Hit]) -> str:
        """The answer key of this prompt, as `generate` would use it (for --dry-run counts): the format in it is
        the one the answer path sends for these passages (`answer_schema`)."""
        return reply_key(model_digest=self.digest, prompt=prompt, options=settings.options(),
                          think=self._think(settings), format=answer_schema(hits), repeat=self.repeat)

    def thinks(self, settings: AnswerSettings) -> bool:
        """As the wrapped generator: the context guard counts the thinking phase, cached reply or not."""
        thinks = getattr(self.inner, "thinks", None)
        return bool(thinks(settings)) if callable(thinks) else False

    @property
    def server_window(self) -> int | None:
        """As the wrapped generator: the window an OpenAI-compatible server decides, cached reply or not (the
        default num_predict and the window check read it)."""
        window = getattr(self.inner, "server_window", None)
        return window if isinstance(window, int) else None

    def count_tokens(self, prompt: str) -> int | None:
        """As the wrapped generator; the answer path asks it only for a prompt whose reply is not cached (`holds`)."""
        count = getattr(self.inner, "count_tokens", None)
        return count(prompt) if callable(count) else None

    def holds(self, prompt: str, settings: AnswerSettings, hits: Sequence[Hit]) -> bool:
        """Whether the reply of this prompt is in the cache (then no request is sent for it)."""
        return self.key(prompt, settings, hits) in self.cache

    def generate(self, prompt: str, settings: AnswerSettings, question: str, hits: list[Hit]) -> ChatReply:
        """The cached reply of this key, else the wrapped generator's (then cached). One key is asked once in this
        process even when several callers want it at the same time: the later ones wait and read the cache."""
        key = self.key(prompt, settings, hits)
        with _ANSWER_KEYS.lock_for(key):
            cached = self.cache.get(key)
            with self._lock:
                if cached is not None:
                    self.hits += 1
                else:
                    self.misses += 1
            if cached is not None:
                return cached
            reply = replace(self.inner.generate(prompt, settings, question, hits), cached=False)
            self.cache.put(key, reply, about={"model": self.model, "repeat": self.repeat,
                                              "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest()})
            return reply

    def _think(self, settings: AnswerSettings) -> bool | str | None:
        # the value actually sent: ServerGenerator turns "auto" into True for thinking models
        think_value = getattr(self.inner, "think_value", None)
        return think_value(settings) if callable(think_value) else settings.think
