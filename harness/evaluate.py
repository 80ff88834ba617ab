"""The end-to-end evaluation: check labels, open the answerer, answer every case, write rows as they finish."""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from chatbot import __version__
from chatbot.answer import Answer, AnswerSettings, PromptTemplate, answer
from chatbot.bot import open_chatbot
from chatbot.chunking import chunk_pages
from chatbot.errors import InputError, RagError
from chatbot.pdfs import Document, read_documents

from .cases import Case, load_checked_cases
from .metrics import metric_names
from .offline import SYSTEM_NAME, ExtractiveGenerator, LexicalRetriever
from .review import apply_reviews, load_reviews
from .rows import build_row
from .runs import (MANIFEST, ROWS, SUMMARY, RowWriter, file_sha256, new_run_dir, read_json, read_rows, summarize,
                   utc_now, write_json)
from .settings import RunSettings

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class Answerer(Protocol):
    """What the harness needs of a RAG system: a question in, an Answer out, and a description of itself."""

    def ask(self, question: str) -> Answer: ...


@dataclass
class System:
    answerer: Answerer
    description: dict  # goes into the manifest: what was evaluated, with versions and digests
    collection: dict  # documents, pages, chunks


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    summary: dict
    manifest: dict


def prepare(settings: RunSettings) -> tuple[list[Document], list[Case]]:
    """Read the documents and cases and check every label against the documents: before any model call."""
    documents = read_documents(settings.docs)
    chunks = chunk_pages([p for d in documents for p in d.pages], settings.chunking())
    return documents, load_checked_cases(settings.cases, documents, chunks)


def open_system(settings: RunSettings, documents: list[Document], progress: Progress | None = None) -> System:
    """The Ollama chatbot over a freshly built index, or the offline baseline with --offline."""
    answering = settings.answering()
    template = PromptTemplate.load(answering.prompt_path)
    if settings.offline:
        chunks = chunk_pages([p for d in documents for p in d.pages], settings.chunking())
        retriever, generator = LexicalRetriever(chunks), ExtractiveGenerator(settings.abstain_below)
        collection = _collection(documents, len(chunks))
        return System(_Bound(retriever, generator, answering, template),
                      {"system": SYSTEM_NAME, "retrieval": "bm25s (lexical)", "model_server": None}, collection)
    bot = open_chatbot(docs=settings.docs, documents=documents, client_settings=settings.client(),
                       chunking=settings.chunking(), embedding=settings.embedding(), settings=answering,
                       cache_dir=settings.cache_dir,
                       progress=(lambda d, t: progress("embedding", d, t)) if progress else None)
    description = {"system": "pdf-rag-eval chatbot over Ollama", "ollama": bot.server.to_dict(),
                   "index": bot.index.manifest, "warnings": list(bot.warnings)}
    return System(bot, description, _collection(documents, len(bot.index.chunks)))


@dataclass
class _Bound:
    """A retriever and a generator bound into an Answerer (the offline baseline)."""

    retriever: LexicalRetriever
    generator: ExtractiveGenerator
    settings: AnswerSettings
    template: PromptTemplate

    def ask(self, question: str) -> Answer:
        return answer(question, self.retriever, self.generator, self.settings, self.template)


def _collection(documents: list[Document], chunks: int) -> dict:
    return {"documents": len(documents), "pages": sum(len(d.pages) for d in documents), "chunks": chunks,
            "empty_pages": {d.doc_id: list(d.empty_pages) for d in documents if d.empty_pages}}


def run_evaluation(settings: RunSettings, *, progress: Progress | None = None, argv: list[str] | None = None,
                   system: System | None = None, resume: str | Path | None = None) -> RunResult:
    """Run every case through the answer path and write the run directory. Rows land in case order, each
    flushed as it is written; the manifest says `incomplete` until the last row is in. With `resume`, an
    interrupted run directory is finished instead, if its settings and inputs are unchanged."""
    documents, cases = prepare(settings)
    reviews = load_reviews(settings.cases)  # read before the index build, so a broken file fails early
    done: set[tuple[str, int]] = set()
    if resume is not None:  # cheap checks first: before the preflight and the index build
        run_dir = Path(resume)
        manifest, done = _resumable(run_dir, _manifest(settings, documents, run_dir, argv))
    system = system or open_system(settings, documents, progress)
    if resume is None:
        run_dir = new_run_dir(settings.out, settings.label)
        manifest = _manifest(settings, documents, run_dir, argv) | {"system": system.description,
                                                                     "collection": system.collection}
    elif _digests(manifest) != _digests({"system": system.description}):
        raise InputError(f"{run_dir}: cannot resume, the model digests changed: {_digests(manifest)} -> "
                         f"{_digests({'system': system.description})}")
    write_json(run_dir / MANIFEST, manifest)
    jobs = [(case, r) for case in cases for r in range(settings.repeat)]
    todo = [job for job in jobs if (job[0].id, job[1]) not in done]
    writer = RowWriter(run_dir, append=resume is not None)
    written = len(jobs) - len(todo)
    try:
        for row in _answer_all(system.answerer, todo, settings):
            writer.write(apply_reviews(row, reviews))  # an unchanged answer keeps its earlier review
            written += 1
            if progress:
                progress("cases", written, len(jobs))
    except (Exception, KeyboardInterrupt) as exc:
        raise RunStopped(run_dir, written, len(jobs), exc) from exc
    finally:
        writer.close()
        manifest["ended_at"] = utc_now()
        write_json(run_dir / MANIFEST, manifest)
    summary = summarize(read_rows(run_dir), metric_names(settings.k), system.collection)
    write_json(run_dir / SUMMARY, summary)
    manifest["status"] = "complete"
    write_json(run_dir / MANIFEST, manifest)
    return RunResult(run_dir, summary, manifest)


class RunStopped(RagError):
    """The run ended early (server gone, Ctrl-C, a bug); its directory holds whole rows and can be resumed."""

    def __init__(self, run_dir: Path, written: int, total: int, cause: BaseException):
        self.run_dir, self.cause = run_dir, cause
        self.exit_code = 130 if isinstance(cause, KeyboardInterrupt) else getattr(cause, "exit_code", 1)
        what = "interrupted" if isinstance(cause, KeyboardInterrupt) else f"stopped: {cause}"
        super().__init__(f"run {what}\n{written} of {total} rows are saved in {run_dir}; finish it with:\n"
                         f"  rag-eval run --resume {run_dir}  (with the same settings)")


# Settings that may change between an interrupted run and its resumption: they do not change any row.
_FREE_TO_CHANGE = {"out", "label", "workers", "timeout", "retries", "backoff", "host", "cache_dir"}


def _resumable(run_dir: Path, fresh: dict) -> tuple[dict, set[tuple[str, int]]]:
    """The saved manifest and the (case id, repeat) pairs already written; refuse if anything that decides a
    row changed since. A last line cut by a kill is dropped from the file before appending."""
    saved = read_json(run_dir / MANIFEST)
    if saved.get("status") == "complete":
        raise InputError(f"{run_dir}: this run is already complete; start a new one instead of --resume")
    changes = [f"settings.{k}: {saved['settings'].get(k)!r} -> {v!r}" for k, v in fresh["settings"].items()
               if k not in _FREE_TO_CHANGE and saved["settings"].get(k) != v]
    for key in ("inputs", "prompt_template"):
        if saved.get(key) != fresh[key]:
            changes.append(f"{key} changed (documents, cases file or prompt template differ)")
    if changes:
        raise InputError(f"{run_dir}: cannot resume, the run would mix two setups:\n  " + "\n  ".join(changes))
    _drop_partial_line(run_dir / ROWS)
    done = {(row["case_id"], row.get("repeat", 0)) for row in read_rows(run_dir)}
    saved["resumed_at"] = [*saved.get("resumed_at", []), utc_now()]
    return saved, done


def _digests(manifest: dict) -> dict:
    models = ((manifest.get("system") or {}).get("ollama") or {}).get("models") or {}
    return {name: info.get("digest") for name, info in models.items()}


def _drop_partial_line(path: Path) -> None:
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def _answer_all(answerer: Answerer, jobs: list[tuple[Case, int]], settings: RunSettings):
    """Yield rows in job order. With workers > 1 every job is submitted at once and at most `workers` run
    together; a row is yielded when it and all rows before it are done."""
    def one(job: tuple[Case, int]) -> dict:
        case, repeat = job
        start = time.perf_counter()
        result = answerer.ask(case.question)
        return build_row(case, result, ks=settings.k, elapsed_ms=(time.perf_counter() - start) * 1000,
                         repeat=repeat)

    if settings.workers == 1:
        yield from map(one, jobs)
        return
    with ThreadPoolExecutor(max_workers=settings.workers) as pool:
        futures = [pool.submit(one, job) for job in jobs]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _manifest(settings: RunSettings, documents: list[Document], run_dir: Path, argv: list[str] | None) -> dict:
    """Everything but the system's description, which needs the server (added by the caller)."""
    template = PromptTemplate.load(settings.prompt)
    return {
        "run_id": run_dir.name,
        "status": "incomplete",
        "started_at": utc_now(),
        "ended_at": None,
        "package_version": __version__,
        "git_commit": _git_commit(),
        "command": argv,
        "settings": settings.to_dict(),
        "answer_options": settings.answering().to_dict() | {"options": settings.answering().options()},
        "prompt_template": {"source": template.source, "sha256": template.sha256},
        "inputs": {"cases": {"path": settings.cases, "sha256": file_sha256(settings.cases)},
                   "documents": [{"doc_id": d.doc_id, "sha256": d.sha256, "pages": len(d.pages)} for d in documents]},
        "metrics": metric_names(settings.k),
    }


def _git_commit() -> str | None:
    """The commit of the checkout this package runs from, when it is one."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
