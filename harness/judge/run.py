"""`rag-eval judge RUN` as a library call: judge every answer of a run, store the verdicts as a reviewer's, and
re-score the run (as a review import does).

For every distinct answer without an error that makes claims (the sentence split `rag-eval review` offers), one
chat call asks for all its claims' verdicts (`prompting.py`, `asking.py`). Each judged answer is saved at once in
the reviews file as a review by `judge:<model>@<digest>` with the prompt's SHA-256, so a stopped command loses
nothing; an answer whose call failed gets an error entry (in `judge.json` of the run) and the command goes on.
The manifest records the judge (`judge`), whose verdicts the run's judged metrics then use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pdfrag.asking import Asker, ChatOptions, Failed, PromptTemplate
from pdfrag.backends import connect
from pdfrag.model_server import ClientSettings, preflight, server_window
from pdfrag.ollama_client import DEFAULT_CHAT_MODEL

from ..records import Manifest, Row, Summary
from ..review.book import JUDGE_PREFIX, Review
from ..review.store import add_reviews, distinct_answers, offered_claims, read_reviews, rewrite_run
from ..runs import MANIFEST, RunLock, read_manifest, read_rows, utc_now, write_json
from .asking import judge_asker, judge_cache
from .prompting import judge_template, judge_values, parse_verdicts, verdicts_schema

__all__ = ["JUDGE_FILE", "JudgeError", "JudgeResult", "JudgeSettings", "judge_name", "judge_run"]

JUDGE_FILE = "judge.json"
Progress = Callable[[int, int, int], None]  # (answers done, answers in all, of the done: from the cache)


@dataclass(frozen=True)
class JudgeSettings:
    """How to reach and ask the judge: the flags runs use for the server and the model."""

    model: str | None = None  # None: the run's chat model, else qwen3:4b
    host: str | None = None
    backend: str | None = None  # ollama | openai; None: the run's, else ollama
    api_key_env: str | None = None  # the variable holding the API key (openai backend), never the key
    timeout: float = ClientSettings.timeout_s
    retries: int = ClientSettings.retries
    backoff: float = ClientSettings.backoff_s
    max_body_bytes: int = ClientSettings.max_body_bytes
    num_ctx: int = 16384
    num_predict: int | None = None  # None: pdfrag.asking.default_num_predict from the server's window
    seed: int = 42
    think: str = "auto"
    prompt: str | None = None
    cache_dir: str | None = None
    min_quote_words: int | None = None  # None: the run's own

    def client(self, backend: str = "ollama", host: str | None = None) -> ClientSettings:
        """The judge's server: the flags given, else the run's (`backend`, `host`). The run's host goes only with
        the run's backend: another API is another server."""
        same_api = self.backend in (None, backend)
        return ClientSettings(host=self.host or (host if same_api else None), timeout_s=self.timeout,
                              retries=self.retries, backoff_s=self.backoff, backend=self.backend or backend,
                              api_key_env=self.api_key_env, max_body_bytes=self.max_body_bytes)

    def options(self, model: str) -> ChatOptions:
        think = {"auto": None, "on": True, "off": False}[self.think]
        return ChatOptions(model, self.seed, 0.0, self.num_ctx, self.num_predict, think)


@dataclass(frozen=True)
class JudgeError:
    case_id: str
    answer_sha256: str
    error: str


@dataclass(frozen=True)
class JudgeResult:
    """What a judge command did. `summary` is None for a dry run."""

    judge: str
    prompt_sha256: str
    answers: int  # answers with claims
    claims: int
    chat_calls: int
    from_cache: int
    errors: tuple[JudgeError, ...] = ()
    summary: Summary | None = None
    calls_needed: int | None = None  # dry run: calls a real run would make
    details: dict[str, Any] = field(default_factory=dict)


def judge_name(model: str, digest: str) -> str:
    """`judge:qwen3:4b@<first 12 hex of the digest>`: the judge's reviewer name."""
    return f"{JUDGE_PREFIX}{model}@{digest[:12]}"


def judge_model(manifest: Manifest, settings: JudgeSettings) -> str:
    """The judge model: --model, else the run's chat model (for the chatbot), else qwen3:4b."""
    if settings.model:
        return settings.model
    saved = manifest.settings
    return saved.chat_model if (saved.system or "chatbot") == "chatbot" and saved.chat_model else DEFAULT_CHAT_MODEL


def _todo(rows: Sequence[Row]) -> list[tuple[Row, list[str]]]:
    return [(row, claims) for row in distinct_answers(rows) if (claims := offered_claims(row))]


def judge_run(run_dir: str | Path, reviews: str | Path, settings: JudgeSettings, *, dry_run: bool = False,
              progress: Progress | None = None) -> JudgeResult:
    """Judge the run's answers into the reviews file `reviews` and re-score the run; with `dry_run`, only count
    the calls it would make (after the server preflight, which the digest needs)."""
    run_dir = Path(run_dir)
    read_reviews(reviews)  # a broken reviews file fails before any call
    prompt = judge_template(settings.prompt)
    manifest = read_manifest(run_dir)
    model = judge_model(manifest, settings)
    client = connect(settings.client(manifest.settings.backend or "ollama", manifest.settings.host))
    info = preflight(client, chat_model=model, embed_model=None, load=False).models[model]
    asker = judge_asker(client, settings.options(model), info.digest, info.capabilities,
                        judge_cache(settings.cache_dir), window=server_window(client, info))
    name, todo = judge_name(model, info.digest), _todo(read_rows(run_dir))
    min_words = settings.min_quote_words or manifest.settings.min_quote_words or 4
    total = sum(len(c) for _, c in todo)
    if dry_run:
        needed = sum(not asker.cached(prompt, verdicts_schema(len(c)), **judge_values(r, c)) for r, c in todo)
        return JudgeResult(name, prompt.sha256, len(todo), total, chat_calls=0, from_cache=len(todo) - needed,
                           calls_needed=needed)
    errors = []
    if progress:  # the start: a log shows the judging began before the first answer is judged
        progress(0, len(todo), 0)
    for done, (row, claims) in enumerate(todo, start=1):
        error = _judge_one(asker, prompt, row, claims, name, reviews, min_words)
        if error is not None:
            errors.append(JudgeError(row.case_id, row.answer.answer_sha256, error))
        if progress:
            progress(done, len(todo), asker.from_cache)
    about = {"reviewer": name, "model": model, "digest": info.digest, "prompt_sha256": prompt.sha256,
             "prompt": prompt.source, "host": client.host, "options": asker.chat.options() | {"think": asker.think},
             "judged_at": utc_now()}
    summary = _record(run_dir, Path(reviews), about, errors, asker)
    return JudgeResult(name, prompt.sha256, len(todo), total, chat_calls=asker.chat_calls,
                       from_cache=asker.from_cache, errors=tuple(errors),
                       summary=summary, details=about)


def _judge_one(asker: Asker, prompt: PromptTemplate, row: Row, claims: list[str], name: str,
               reviews: str | Path, min_words: int) -> str | None:
    """Judge one answer and save its review; the error text when that failed."""
    schema = verdicts_schema(len(claims))
    outcome = asker.ask(prompt, schema, **judge_values(row, claims))
    if isinstance(outcome, Failed):
        return outcome.error
    try:
        judged = parse_verdicts(outcome.reply, row, claims, min_quote_words=min_words)
    except ValueError as exc:
        return str(exc)
    add_reviews(reviews, [Review(row.case_id, row.answer.answer_sha256, judged, name, utc_now(), prompt.sha256)])
    return None


def _record(run_dir: Path, reviews: Path, about: dict[str, Any], errors: list[JudgeError],
            asker: Asker) -> Summary:
    """The judge into the manifest and `judge.json` (with the error entries), then the run re-scored."""
    with RunLock(run_dir):  # read again under the lock: the run may have been written since the judging began
        manifest = read_manifest(run_dir).model_copy(update={"judge": about})
        write_json(run_dir / MANIFEST, manifest.to_json())
        write_json(run_dir / JUDGE_FILE, about | {"chat_calls": asker.chat_calls, "from_cache": asker.from_cache,
                                                  "errors": [asdict(e) for e in errors]})
        return rewrite_run(run_dir, manifest, read_reviews(reviews))
