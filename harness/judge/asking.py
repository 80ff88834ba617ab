"""The judge's reply store: one chat call per answer through `pdfrag.asking.Asker` (the Ollama client, or the
OpenAI-compatible one with --backend openai), its replies kept like answers.

The request: one chat call (`/api/chat`, or `/v1/chat/completions`), one user message, `stream: false`, the
verdicts schema as `format`, options {temperature: 0, seed, num_ctx, num_predict}, `think` as runs send it (on
for models with the thinking capability under `auto`). Replies are kept by `pdfrag.reply_cache.reply_key`
(model digest or name identity, SHA-256 of the rendered prompt: template, question, answer, claims and passages;
options with the API spoken; think; schema) under `<cache dir>/judge-replies/`, and only once they parse and match
the schema, so a rerun makes no call for an unchanged answer and asks again for one that failed. A timeout, a
server error or gone away, a reply cut off or malformed is a `Failed` outcome for that answer; the caller goes on.
"""

from __future__ import annotations

from pdfrag.asking import Asker, ChatOptions, PromptTemplate, Replied, read_reply, sha256, split_thinking
from pdfrag.model_server import ChatReply, ModelServer
from pdfrag.reply_cache import AnswerCache, reply_key
from pdfrag.safe_files import cache_root

__all__ = ["JudgeReplies", "judge_asker", "judge_cache"]


def judge_cache(cache_dir: str | None = None) -> AnswerCache:
    """`judge-replies/` under the cache folder (`--cache-dir`, else $PDF_RAG_EVAL_CACHE, ...)."""
    return AnswerCache(cache_root(cache_dir) / "judge-replies")


class JudgeReplies:
    """The judge's `ReplyStore`: chat replies in an answer cache, keyed like answers."""

    def __init__(self, cache: AnswerCache):
        self.cache = cache

    def key(self, asker: Asker, template: PromptTemplate, prompt: str, schema: dict) -> str:
        # the API spoken is part of the key: the same name and prompt on another backend is another model
        options = asker.chat.options() | {"backend": asker.client.backend}
        return reply_key(model_digest=asker.digest, prompt=prompt, options=options, think=asker.think,
                          format=schema, repeat=0)

    def get(self, key: str, schema: dict) -> Replied | None:
        cached = self.cache.get(key)
        if cached is None:
            return None
        outcome = read_reply(split_thinking(cached.content)[0], schema)
        return Replied(outcome.reply, from_cache=True) if isinstance(outcome, Replied) else None

    def put(self, key: str, asker: Asker, outcome: Replied, reply: ChatReply, prompt: str) -> None:
        self.cache.put(key, reply, about={"model": asker.chat.model, "judge": True, "prompt_sha256": sha256(prompt)})


def judge_asker(client: ModelServer, options: ChatOptions, digest: str, capabilities: tuple[str, ...],
                cache: AnswerCache, *, window: int | None = None) -> Asker:
    """The asker every judge command uses: the model-server seam with the judge's reply store."""
    return Asker(client, options, digest, capabilities, JudgeReplies(cache), window=window)
