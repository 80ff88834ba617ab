"""The answer path: retrieve passages, ask the chat model for JSON with quoted citations, validate every quote."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Protocol, TypedDict

import jsonschema

from pdfrag.asking import (
    DEFAULT_NUM_PREDICT,
    LONGER_WINDOW,
    Failed,
    PromptTemplate,
    default_num_predict,
    over_budget,
    read_reply,
    refused_by_window,
    split_thinking,
    window_advice,
)
from pdfrag.citations import CheckedCitation
from pdfrag.errors import BadReply, GenerationAborted, InputError, InputTooLong, ServerTimeout
from pdfrag.model_server import ChatReply

from .citations import validate_citation
from .index import Hit
from .retrievers import Retriever

NO_ANSWER = "I could not find the answer in the documents."
STATUSES = ("answered", "no_answer", "invalid_citation", "malformed_output", "error")

# The structured output the chat model must produce; sent as Ollama's `format`.
ANSWER_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "citations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"source_id": {"type": "string"}, "quote": {"type": "string"}},
                "required": ["source_id", "quote"],
            },
        },
    },
    "required": ["answer", "citations"],
}
_ANSWER_VALIDATOR = jsonschema.Draft202012Validator(ANSWER_SCHEMA)  # built once: validate() re-checks the schema


def answer_schema(hits: Sequence[Hit]) -> dict:
    """The format sent with one question: ANSWER_SCHEMA with the retrieved passages' ids as the only `source_id`
    values (an `enum`, which Ollama and llama.cpp enforce by grammar, so no invented id can be written). Replies are
    read against ANSWER_SCHEMA itself: an id outside the list is still an invalid citation, as strict as ever."""
    ids = list(dict.fromkeys(h.chunk.source_id for h in hits))
    if not ids:
        return ANSWER_SCHEMA
    item = ANSWER_SCHEMA["properties"]["citations"]["items"]
    cited = {**item, "properties": {**item["properties"], "source_id": {"type": "string", "enum": ids}}}
    citations = {**ANSWER_SCHEMA["properties"]["citations"], "items": cited}
    return {**ANSWER_SCHEMA, "properties": {**ANSWER_SCHEMA["properties"], "citations": citations}}


@dataclass(frozen=True)
class AnswerSettings:
    """How questions are answered. `think=None` means: on when the model reports the thinking capability.
    `num_ctx` must hold the prompt plus num_predict, twice over when the model thinks (thinking and answer are
    two phases on the server, each allowed num_predict tokens); `num_predict=None` is decided from the server
    (`resolved`, `pdfrag.asking.default_num_predict`). `max_reply_chars` caps what a reply may be."""

    top_k: int = 4
    chat_model: str = "qwen3:4b"
    prompt_path: str | None = None  # None: the bundled chatbot/prompts/default.txt
    temperature: float = 0.0
    seed: int = 42
    num_ctx: int = 16384
    num_predict: int | None = None
    think: bool | None = None
    min_quote_words: int = 4
    no_answer_message: str = NO_ANSWER
    max_reply_chars: int = 200_000
    retriever: str = "dense"  # dense | bm25 | hybrid (chatbot/retrievers.py)

    def __post_init__(self) -> None:
        for name in ("top_k", "num_ctx", "num_predict", "min_quote_words", "max_reply_chars"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise InputError(f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.retriever not in ("dense", "bm25", "hybrid"):
            raise InputError(f"retriever must be dense, bm25 or hybrid, got {self.retriever!r}")

    def options(self) -> dict:
        return {"temperature": self.temperature, "seed": self.seed, "num_ctx": self.num_ctx,
                "num_predict": self.budget}

    @property
    def budget(self) -> int:
        """num_predict as sent: the one given, else the default where we set the context (Ollama)."""
        return self.num_predict if self.num_predict is not None else DEFAULT_NUM_PREDICT

    def resolved(self, window: int | None, *, thinks: bool) -> AnswerSettings:
        """These settings with num_predict decided: as given, else from the server's window (None: ours)."""
        if self.num_predict is not None:
            return self
        return replace(self, num_predict=default_num_predict(window, thinks=thinks))

    def to_dict(self) -> dict:
        return asdict(self)


class Generator(Protocol):
    """Turns a rendered prompt into a reply whose `content` should be JSON matching ANSWER_SCHEMA.
    The question and passages are passed too, for answerers that do not read prompts. A generator may also
    offer `thinks(settings) -> bool` (two-phase replies need twice num_predict of context; without it, no),
    `server_window` (the context the server decides, in tokens; without it or None, `num_ctx`) and
    `count_tokens(prompt) -> int | None` (the prompt's tokens as the server counts them; without it, estimated)."""

    model: str
    digest: str

    def generate(self, prompt: str, settings: AnswerSettings, question: str, hits: list[Hit]) -> ChatReply: ...


@dataclass(frozen=True)
class Answer:
    """Everything one question produced. `text` is what a user is shown; `raw` is the model's content as sent."""

    question: str
    status: str
    text: str
    model_answer: str
    citations: tuple[CheckedCitation, ...]
    hits: tuple[Hit, ...]
    raw: str
    reasons: tuple[str, ...] = ()
    thinking_chars: int = 0
    prompt_sha256: str = ""
    model: str = ""
    model_digest: str = ""
    done_reason: str | None = None
    usage: dict = field(default_factory=dict)  # prompt_tokens, output_tokens, *_ms durations, retries
    error: str | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["hits"] = [{"rank": h.rank, "score": h.score, **h.chunk.to_dict()} for h in self.hits]
        return data


class AnswerOrigin(TypedDict):
    """The fields of an Answer that say what was asked and how, whatever the outcome."""

    question: str
    prompt_sha256: str
    model: str
    model_digest: str


def answer_template(path: str | Path | None = None) -> PromptTemplate:
    """The answer prompt: the bundled `chatbot/prompts/default.txt`, or the file at `path`; it must use $question
    and $passages and nothing else."""
    template = PromptTemplate.read(path) if path is not None else PromptTemplate.bundled("chatbot", "default")
    return template.require(("question", "passages"), exact=True)


def render_prompt(template: PromptTemplate, question: str, hits: Sequence[Hit]) -> str:
    """The prompt for one question: `$passages` holds each passage after a `[source: ID]` line, best first."""
    passages = "\n\n".join(f"[source: {h.chunk.source_id}]\n{h.chunk.text}" for h in hits)
    return template.render(question=question, passages=passages)


def answer(question: str, retriever: Retriever, generator: Generator, settings: AnswerSettings,
           template: PromptTemplate) -> Answer:
    """Answer one question. Per-question failures become an Answer with status `error`; a server that is
    down, busy or missing the model raises, since every later question would fail the same way."""
    base = AnswerOrigin(question=question, prompt_sha256=template.sha256, model=generator.model,
                        model_digest=generator.digest)
    settings = settings.resolved(_window(generator), thinks=_thinks(generator, settings))
    hits: list[Hit] = []
    try:
        hits = retriever.retrieve(question, settings.top_k)
        prompt = render_prompt(template, question, hits)
        _check_fits(prompt, settings, thinks=_thinks(generator, settings), server_window=_window(generator),
                    tokens=_counted(generator, prompt, settings, hits))
        reply = _generate(generator, prompt, settings, question, hits)
    except GenerationAborted as exc:  # the model looped: a bad output for this question, not a setup error
        return Answer(status="malformed_output", text=settings.no_answer_message, model_answer="", citations=(),
                      hits=tuple(hits), raw=exc.partial[:settings.max_reply_chars], reasons=(str(exc),),
                      usage={"reply_chars": len(exc.partial)}, **base)
    except (BadReply, InputTooLong, ServerTimeout, _PromptTooLong) as exc:
        return Answer(status="error", text=settings.no_answer_message, model_answer="", citations=(),
                      hits=tuple(hits), raw="", reasons=(str(exc),), error=str(exc), **base)
    return check_reply(reply, hits, settings, base, window=_window(generator))


def check_reply(reply: ChatReply, hits: list[Hit], settings: AnswerSettings, base: AnswerOrigin, *,
                window: int | None = None) -> Answer:
    """Parse the reply and validate every citation; only a fully valid, cited answer is `answered`."""
    content, leaked = split_thinking(reply.content)
    thinking_chars = len(reply.thinking) + len(leaked)
    withheld = settings.no_answer_message

    def answer_as(status: str, text: str, model_answer: str, citations: tuple[CheckedCitation, ...],
               reasons: tuple[str, ...] = ()) -> Answer:
        return Answer(status=status, text=text, model_answer=model_answer, citations=citations, reasons=reasons,
                      hits=tuple(hits), raw=reply.content[:settings.max_reply_chars], thinking_chars=thinking_chars,
                      done_reason=reply.done_reason, usage=_usage(reply), **base)

    problem = (_size_problem(reply, settings) or _length_problem(reply, content, thinking_chars, settings, window)
               or _stop_problem(reply))
    if problem:
        return answer_as("malformed_output", withheld, "", (), (problem,))
    outcome = read_reply(content, _ANSWER_VALIDATOR, schema_name="answer schema")
    if isinstance(outcome, Failed):
        return answer_as("malformed_output", withheld, "", (), (outcome.error,))
    parsed = outcome.reply
    model_answer = parsed["answer"].strip()
    citations = tuple(validate_citation(c["source_id"], c["quote"], hits, min_words=settings.min_quote_words)
                      for c in parsed["citations"])
    if not model_answer or not citations:
        reason = "the model gave no answer" if not model_answer else "the answer has no citation"
        return answer_as("no_answer", withheld, model_answer, citations, (reason,))
    bad = tuple(c.reason for c in citations if c.reason is not None)  # set exactly when the citation is invalid
    if bad:
        return answer_as("invalid_citation", withheld, model_answer, citations, bad)
    return answer_as("answered", model_answer, model_answer, citations)


def _size_problem(reply: ChatReply, settings: AnswerSettings) -> str | None:
    """Over the cap, a reply is not parsed and is stored cut (its full length is in usage.reply_chars)."""
    size, cap = len(reply.content), settings.max_reply_chars
    if size <= cap:
        return None
    return (f"reply is {size:,} characters, over --max-reply-chars {cap:,}; only its first {cap:,} characters "
            "are stored")


def _length_problem(reply: ChatReply, content: str, thinking_chars: int, settings: AnswerSettings,
                    window: int | None) -> str | None:
    """done_reason `length`: say whether the server's window was full (prompt and reply tokens fill it before
    num_predict: a llama.cpp slot stops there, whatever was asked), or the thinking spent the budget (no answer text
    came at all), or the reply reached num_predict."""
    if reply.done_reason != "length":
        return None
    used = (reply.prompt_tokens or 0) + (reply.output_tokens or 0)
    if window and reply.output_tokens is not None and reply.output_tokens < settings.budget and used >= window:
        return (f"the reply filled the server's context window of {window} tokens (prompt {reply.prompt_tokens} + "
                f"reply {reply.output_tokens}) before num_predict={settings.budget} (done_reason: length); "
                f"{LONGER_WINDOW}, or lower --top-k or --chunk-size")
    if not content.strip() and thinking_chars:
        return (f"the thinking spent the whole budget: {thinking_chars:,} characters of thinking and no answer "
                f"before num_predict={settings.budget} (done_reason: length); raise --num-predict and "
                "--num-ctx")
    return f"reply cut off at num_predict={settings.budget} (done_reason: length); raise --num-predict"


# Finish reasons saying the model did something other than answer (OpenAI-compatible servers): the reply is
# malformed_output with this reason, never parsed, whatever its content holds. `refusal` is what a client reports
# for a reply whose `refusal` field is set.
_NOT_AN_ANSWER = {
    "tool_calls": "the model called a tool instead of answering in the answer schema",
    "function_call": "the model called a function instead of answering in the answer schema",
    "content_filter": "the server's content filter stopped the reply",
    "refusal": "the model refused to answer in the answer schema",
}


def _stop_problem(reply: ChatReply) -> str | None:
    why = _NOT_AN_ANSWER.get(reply.done_reason or "")
    return f"{why} (done_reason: {reply.done_reason})" if why else None


def _usage(reply: ChatReply) -> dict:
    """The server's figures. With thinking they describe only the final (answer) phase, so `phase` says which:
    "final" when the reply came with separate thinking, "single" otherwise. With the answer cache on, `cached`
    says whether the reply came from it (its timings are then those of the call that filled it)."""
    return {"prompt_tokens": reply.prompt_tokens, "output_tokens": reply.output_tokens, "total_ms": reply.total_ms,
            "load_ms": reply.load_ms, "prompt_eval_ms": reply.prompt_eval_ms, "eval_ms": reply.eval_ms,
            "retries": reply.retries, "phase": "final" if reply.thinking else "single",
            "reply_chars": len(reply.content)} | ({} if reply.cached is None else {"cached": reply.cached})


def _thinks(generator: Generator, settings: AnswerSettings) -> bool:
    thinks = getattr(generator, "thinks", None)
    return bool(thinks(settings)) if callable(thinks) else False


def _window(generator: Generator) -> int | None:
    window = getattr(generator, "server_window", None)
    return window if isinstance(window, int) else None


def _counted(generator: Generator, prompt: str, settings: AnswerSettings, hits: Sequence[Hit]) -> int | None:
    """The prompt's tokens as the server counts them, where it decides the window and can count; not asked for a
    reply the answer cache holds (no request is sent for it: the estimate checks it, and the server's count let
    it through when it was asked)."""
    count = getattr(generator, "count_tokens", None)
    if not callable(count) or not _window(generator):
        return None
    holds = getattr(generator, "holds", None)
    return None if callable(holds) and holds(prompt, settings, hits) else count(prompt)


def _generate(generator: Generator, prompt: str, settings: AnswerSettings, question: str,
              hits: list[Hit]) -> ChatReply:
    """The reply; a prompt the server refuses as longer than the window it decides is the window's error, as
    the check before asking would have said (our estimate let it through)."""
    try:
        return generator.generate(prompt, settings, question, hits)
    except InputTooLong as exc:
        window = _window(generator)
        if window is None:
            raise
        raise _PromptTooLong(f"{refused_by_window(exc, settings.budget)} {window_advice(window)}") from None


class _PromptTooLong(Exception):
    pass


def _check_fits(prompt: str, settings: AnswerSettings, *, thinks: bool, server_window: int | None = None,
                tokens: int | None = None) -> None:
    """With thinking the server feeds the thinking (up to num_predict) back into the prompt of the answer phase
    (up to num_predict more), so the budget is prompt + 2 x num_predict. The window is
    `num_ctx`, or the one the server reports when it decides it (`server_window`, OpenAI-compatible servers)."""
    problem = over_budget(prompt, num_predict=settings.budget, window=server_window or settings.num_ctx,
                          thinks=thinks, tokens=tokens)
    if problem and server_window:
        raise _PromptTooLong(f"{problem} {window_advice(server_window)}")
    if problem:
        raise _PromptTooLong(f"{problem} num_ctx={settings.num_ctx}, and Ollama would cut the prompt silently; raise "
                             "--num-ctx, or lower --num-predict, --top-k or --chunk-size")
