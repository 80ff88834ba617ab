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

from chatbot.answer import split_thinking
from chatbot.answer_cache import AnswerCache, KeyLocks, answer_key
from chatbot.index import cache_root
from chatbot.model_server import ModelServer

from ..drafting.prompting import Asker, ChatOptions, Outcome, Replied, parse_reply

__all__ = ["JudgeAsker", "judge_cache"]

_KEYS = KeyLocks()


def judge_cache(cache_dir: str | None = None) -> AnswerCache:
    """`judge-replies/` under the cache folder (`--cache-dir`, else $PDF_RAG_EVAL_CACHE, ...)."""
    return AnswerCache(cache_root(cache_dir) / "judge-replies")


class JudgeAsker(Asker):
    """The drafting asker with the judge's cache (answer-cache files keyed like answers); counts the chat calls it
    made and the replies the cache gave."""

    def __init__(self, client: ModelServer, options: ChatOptions, digest: str, capabilities: tuple[str, ...],
                 cache: AnswerCache):
        super().__init__(client, options, digest, capabilities, None)
        self.replies = cache
        self.from_cache = 0

    def key(self, prompt: str, schema: dict) -> str:
        # the API spoken is part of the key: the same name and prompt on another backend is another model
        options = self.chat.options() | {"backend": self.client.backend}
        return answer_key(model_digest=self.digest, prompt=prompt, options=options, think=self.think,
                          format=schema, repeat=0)

    def cached(self, prompt: str, schema: dict) -> bool:
        return self.key(prompt, schema) in self.replies

    def judge(self, prompt: str, schema: dict) -> Outcome:
        """The parsed reply (from the cache when it holds one), or why there is none."""
        key = self.key(prompt, schema)
        with _KEYS.lock_for(key):
            if (cached := self.replies.get(key)) is not None:
                outcome = parse_reply(split_thinking(cached.content)[0], schema)
                if isinstance(outcome, Replied):
                    self.from_cache += 1
                    return Replied(outcome.reply, from_cache=True)
            outcome, reply = self.request(prompt, schema)
            if isinstance(outcome, Replied) and reply is not None:
                self.replies.put(key, reply, about={"model": self.chat.model, "judge": True,
                                                    "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest()})
            return outcome
