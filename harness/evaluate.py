"""The end-to-end evaluation: check labels, open the answerer, answer every case, write rows as they finish."""

from __future__ import annotations

import hashlib
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from chatbot import __version__
from chatbot.answer import Answer, PromptTemplate, answer
from chatbot.bot import open_chatbot
from chatbot.chunking import chunk_pages
from chatbot.pdfs import Document, read_documents

from .cases import Case, check_labels, load_cases
from .metrics import metric_names
from .offline import SYSTEM_NAME, ExtractiveGenerator, LexicalRetriever
from .rows import build_row
from .runs import MANIFEST, SUMMARY, RowWriter, new_run_dir, summarize, utc_now, write_json
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
    cases = load_cases(settings.cases)
    check_labels(cases, documents, cases_path=settings.cases)
    return documents, cases


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
                   "index": bot.index.manifest}
    return System(bot, description, _collection(documents, len(bot.index.chunks)))


@dataclass
class _Bound:
    retriever: LexicalRetriever
    generator: ExtractiveGenerator
    settings: object
    template: PromptTemplate

    def ask(self, question: str) -> Answer:
        return answer(question, self.retriever, self.generator, self.settings, self.template)


def _collection(documents: list[Document], chunks: int) -> dict:
    return {"documents": len(documents), "pages": sum(len(d.pages) for d in documents), "chunks": chunks,
            "empty_pages": {d.doc_id: list(d.empty_pages) for d in documents if d.empty_pages}}


def run_evaluation(settings: RunSettings, *, progress: Progress | None = None, argv: list[str] | None = None,
                   system: System | None = None) -> RunResult:
    """Run every case through the answer path and write the run directory. Rows land in case order, each
    flushed as it is written; the manifest says `incomplete` until the last row is in."""
    documents, cases = prepare(settings)
    system = system or open_system(settings, documents, progress)
    run_dir = new_run_dir(settings.out, settings.label)
    manifest = _manifest(settings, documents, system, run_dir, argv)
    write_json(run_dir / MANIFEST, manifest)
    jobs = [(case, r) for case in cases for r in range(settings.repeat)]
    writer = RowWriter(run_dir)
    try:
        for done, row in enumerate(_answer_all(system.answerer, jobs, settings), start=1):
            writer.write(row)
            if progress:
                progress("cases", done, len(jobs))
    finally:
        writer.close()
        manifest["ended_at"] = utc_now()
        write_json(run_dir / MANIFEST, manifest)
    from .runs import read_rows  # the rows as written: the summary is computed from the file itself
    summary = summarize(read_rows(run_dir), metric_names(settings.k), system.collection)
    write_json(run_dir / SUMMARY, summary)
    manifest["status"] = "complete"
    write_json(run_dir / MANIFEST, manifest)
    return RunResult(run_dir, summary, manifest)


def _answer_all(answerer: Answerer, jobs: list[tuple[Case, int]], settings: RunSettings):
    """Yield rows in job order; with workers > 1 the answers are computed in parallel, a window ahead."""
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


def _manifest(settings: RunSettings, documents: list[Document], system: System, run_dir: Path,
              argv: list[str] | None) -> dict:
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
        "system": system.description,
        "collection": system.collection,
        "inputs": {"cases": {"path": settings.cases, "sha256": _sha256(Path(settings.cases))},
                   "documents": [{"doc_id": d.doc_id, "sha256": d.sha256, "pages": len(d.pages)} for d in documents]},
        "metrics": metric_names(settings.k),
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git_commit() -> str | None:
    """The commit of the checkout this package runs from, when it is one."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
