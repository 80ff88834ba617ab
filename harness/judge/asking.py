"""One judge call per answer, through the chatbot's model-server seam (the Ollama client, or the OpenAI-compatible
one with --backend openai), with its replies cached like answers.

The request: one chat call (`/api/chat`, or `/v1/chat/completions`), one user message, `stream: false`, the
verdicts schema as `format`, options {temperature: 0, seed, num_ctx, num_predict}, `think` as runs send it (on
for models with the thinking capability under `auto`). Replies are cached by `chatbot.answer_cache.answer_key`
(model digest or name identity, SHA-256 of the rendered prompt: template, question, answer, claims and passages;
options; think; schema) under `<cache dir>/judge-replies/`, and only once they parse and match the schema, so a
rerun makes no call for an unchanged answer and asks again for one that failed. A timeout, a server error or gone
away, a reply cut off or malformed is a `Failed` outcome for that answer; the caller goes on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from chatbot.answer import split_thinking
from chatbot.answer_cache import AnswerCache, KeyLocks, answer_key
from chatbot.errors import OllamaError
from chatbot.index import cache_root
from chatbot.model_server import ModelServer

from ..drafting.prompting import Failed, Outcome, Replied, parse_reply

__all__ = ["JudgeAsker", "JudgeOptions", "judge_cache"]

_CHARS_PER_TOKEN = 3  # the answer path's conservative prompt estimate
_KEYS = KeyLocks()


@dataclass(frozen=True)
class JudgeOptions:
    """Sampling and budget of judge calls; `think` None = on for models with the thinking capability."""

    model: str
    seed: int = 42
    num_ctx: int = 16384
    num_predict: int = 4096
    think: bool | None = None

    def options(self) -> dict[str, Any]:
        return {"temperature": 0.0, "seed": self.seed, "num_ctx": self.num_ctx, "num_predict": self.num_predict}


def judge_cache(cache_dir: str | None = None) -> AnswerCache:
    """`judge-replies/` under the cache folder (`--cache-dir`, else $PDF_RAG_EVAL_CACHE, ...)."""
    return AnswerCache(cache_root(cache_dir) / "judge-replies")


class JudgeAsker:
    """Asks the judge model through `client`; counts the chat calls it made and the replies the cache gave."""

    def __init__(self, client: ModelServer, options: JudgeOptions, digest: str, capabilities: tuple[str, ...],
                 cache: AnswerCache):
        self.client, self.chat, self.digest, self.cache = client, options, digest, cache
        self.think = options.think if options.think is not None else (True if "thinking" in capabilities else None)
        self.chat_calls = self.from_cache = 0

    def key(self, prompt: str, schema: dict) -> str:
        # the API spoken is part of the key: the same name and prompt on another backend is another model
        options = self.chat.options() | {"backend": getattr(self.client, "backend", "ollama")}
        return answer_key(model_digest=self.digest, prompt=prompt, options=options, think=self.think,
                          format=schema, repeat=0)

    def cached(self, prompt: str, schema: dict) -> bool:
        return self.key(prompt, schema) in self.cache

    def ask(self, prompt: str, schema: dict) -> Outcome:
        """The parsed reply (from the cache when it holds one), or why there is none."""
        key = self.key(prompt, schema)
        with _KEYS.lock_for(key):
            if (cached := self.cache.get(key)) is not None:
                outcome = parse_reply(split_thinking(cached.content)[0], schema)
                if isinstance(outcome, Replied):
                    self.from_cache += 1
                    return Replied(outcome.reply, from_cache=True)
            estimate = len(prompt) // _CHARS_PER_TOKEN
            budget = self.chat.num_predict * (2 if self.think else 1)  # thinking, then the answer
            if estimate + budget > self.chat.num_ctx:
                return Failed(f"the prompt (~{estimate} tokens) plus {budget} tokens to write may exceed "
                              f"num_ctx={self.chat.num_ctx}; raise --num-ctx")
            return self._call(key, prompt, schema)

    def _call(self, key: str, prompt: str, schema: dict) -> Outcome:
        self.chat_calls += 1
        try:
            reply = self.client.chat(self.chat.model, [{"role": "user", "content": prompt}], format=schema,
                                     options=self.chat.options(), think=self.think)
        except OllamaError as exc:  # timeouts, server errors, a server gone away: this answer only
            return Failed(f"{type(exc).__name__}: {exc}")
        if reply.done_reason == "length":
            return Failed(f"reply cut off at num_predict={self.chat.num_predict} (done_reason: length); raise "
                          "--num-predict")
        outcome = parse_reply(split_thinking(reply.content)[0], schema)
        if isinstance(outcome, Replied):
            self.cache.put(key, reply, about={"model": self.chat.model, "judge": True,
                                              "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest()})
        return outcome
