"""The end-to-end evaluation: check labels, open the system, answer every case, write rows as they finish."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from pdfrag import __version__
from pdfrag.chunking import chunk_pages
from pdfrag.errors import ModelMissing, ServerBusy, ServerUnreachable
from pdfrag.page_cache import PageCache
from pdfrag.pdfs import Document, page_texts, read_documents
from pdfrag.safe_files import open_regular
from pdfrag.versions import software_versions

from .cases import Case, load_checked_cases, select_cases
from .errors import InputError, RunStopped, SystemDown, command
from .judged.standing import JudgeStanding, judged_passed
from .metrics.registry import metric_names
from .records import (
    MANIFEST_FORMAT,
    CollectionRecord,
    Manifest,
    PromptTemplateRecord,
    Row,
    RunSettingsRecord,
    Summary,
    SystemAnswer,
    SystemRecord,
    VersionsRecord,
    field_problem,
)
from .review.store import apply_reviews, load_reviews, run_judge
from .rows import ScoringRules, fold_pages, guarded_row
from .runs import (
    MANIFEST,
    ROWS,
    SUMMARY,
    RowWriter,
    RunLock,
    file_sha256,
    new_run_dir,
    read_manifest,
    read_rows,
    utc_now,
    write_json,
    write_rows,
)
from .saved.from_run import write_replay
from .settings import PATH_SETTINGS, RunSettings, absolute_path
from .summary import summarize
from .systems import (
    PooledSystem,
    SeesQuestionsAhead,
    System,
    SystemContext,
    load_system,
    to_answer,
    traits_for,
    traits_of,
)
from .systems.loading import described, prompt_template_for
from .systems.seam import checked_answer

Progress = Callable[[str, int, int], None]  # (stage, done, total)
# These mean every later case would fail the same way: the run stops (and can be resumed) instead.
FATAL = (ServerUnreachable, ModelMissing, ServerBusy, SystemDown)


class Prepared(NamedTuple):
    """What a run works on: the documents, the selected cases (all unless a selection was given) and the
    selection as the manifest records it ({} for all cases)."""

    documents: list[Document]
    cases: list[Case]
    selection: dict[str, Any]


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    summary: Summary
    manifest: Manifest
    judge: JudgeStanding | None = None  # with --judged-passed: whether the judge earned its say over `passed`


def prepare(settings: RunSettings, progress: Progress | None = None, *,
            documents: list[Document] | None = None, cache: PageCache | None = None) -> Prepared:
    """Read the documents (unless given, already read from `settings.docs`) and cases, check every label
    against the documents (before any model call), then select the cases the settings ask for. The check that
    evidence quotes fit in one chunk applies to systems whose chunks are our chunker's (`label_checks_chunks`).
    Page text comes through `cache` (default: the page cache of `settings.cache_dir`; its `problem` is the
    caller's to show)."""
    if documents is None:
        documents = read_documents(settings.docs,
                                   (lambda d, t: progress("reading PDFs", d, t)) if progress else None,
                                   cache=cache or PageCache.at(settings.cache_dir))
    chunks = (chunk_pages([p for d in documents for p in d.pages], settings.chunking())
              if traits_for(settings.system).label_checks_chunks else None)
    cases, selection = select_cases(load_checked_cases(settings.cases, documents, chunks), settings)
    return Prepared(documents, cases, selection)


def run_evaluation(settings: RunSettings, *, progress: Progress | None = None, argv: list[str] | None = None,
                   system: System | None = None, resume: str | Path | None = None,
                   run_dir: str | Path | None = None, documents: list[Document] | None = None,
                   status: Callable[[str], None] | None = None, rerun_of: str | Path | None = None) -> RunResult:
    """Run every case through the system and write the run directory. Rows land in case order, each flushed as
    it is written; the manifest says `incomplete` until the last row is in. With `resume`, an interrupted run
    directory is finished instead, if its settings and inputs are unchanged. `run_dir` names the new run's
    directory (it must not exist yet; a sweep places its cells so) instead of `<out>/<time>-<label>`. The run
    directory is locked while this process writes it. `documents` are `settings.docs` already read (a sweep
    reads them once for all its cells). `rerun_of` names a finished run whose errored cases are asked again into
    the new run; its other rows are carried over as they are (its setup must be the same)."""
    page_cache = PageCache.at(settings.cache_dir)
    documents, cases, selection = prepare(settings, progress, documents=documents, cache=page_cache)
    reviews = load_reviews(settings.cases)  # read before the index build, so a broken file fails early
    fresh = _manifest(settings, documents, argv).model_copy(update={"selection": selection})
    with ExitStack() as stack:
        done: set[tuple[str, int]] = set()
        target: Path
        if resume is not None:  # cheap checks first: before the preflight and the index build
            target = Path(resume).absolute()  # a plug-in may change the directory while it runs
            stack.enter_context(RunLock(target))  # before reading what is done: nobody else appends now
            manifest, done = _resumable(target, fresh)
        carried = _carried_rows(Path(rerun_of), fresh) if rerun_of is not None else []
        done |= {row.key for row in carried}
        system = system or load_system(settings.system, SystemContext(settings, documents, progress, status))
        description = _described(system, settings.system)
        if page_cache.problem:  # said with the system's warnings: printed by the CLI, kept in the manifest
            description = description.model_copy(update={"warnings": (*description.warnings, page_cache.problem)})
        if resume is None:
            target = (_fresh_dir(Path(run_dir).absolute()) if run_dir is not None  # absolute: as above
                      else new_run_dir(Path(settings.out).absolute(), settings.label))
            stack.enter_context(RunLock(target))
            manifest = fresh.model_copy(update={"run_id": target.name, "system": description,
                                                "collection": _collection(documents, system)})
            if (judge := reviews.latest_judge_review()) is not None:  # its verdicts on unchanged answers count
                found = {"reviewer": judge.reviewer, "from": "reviews file"}
                found |= {"prompt_sha256": judge.prompt_sha256} if judge.prompt_sha256 else {}
                manifest = manifest.model_copy(update={"judge": found})
            if rerun_of is not None:
                manifest = manifest.model_copy(update={"rerun_of": {"run": str(rerun_of), "carried": len(carried)}})
                write_rows(target, carried)
        elif manifest.system.digests() != description.digests():
            raise InputError(f"{target}: cannot resume, the model digests changed: {manifest.system.digests()} "
                             f"-> {description.digests()}")
        return _answer_into(target, manifest, system, cases, done, reviews, settings, documents, progress)


def _answer_into(run_dir: Path, manifest: Manifest, system: System, cases: list[Case], done: set[tuple[str, int]],
                 reviews: Any, settings: RunSettings, documents: list[Document],
                 progress: Progress | None) -> RunResult:
    """Answer every case not yet done into `run_dir`, then write the summary, the replay files and the final
    manifest."""
    write_json(run_dir / MANIFEST, manifest.to_json())
    jobs = [(case, r) for case in cases for r in range(settings.repeat)]
    todo = [job for job in jobs if (job[0].id, job[1]) not in done]
    pages = page_texts(documents)
    rules = ScoringRules(tuple(settings.k), settings.min_quote_words, fold_pages(pages))
    written = len(jobs) - len(todo)
    try:
        writer = RowWriter(run_dir, append=bool(done) or (run_dir / ROWS).exists())
        if progress:  # what an earlier, interrupted run already wrote counts as done before, not in the rate
            progress("cases", written, len(jobs))
        try:
            for row in _answer_all(system, todo, settings, rules):
                # an unchanged answer keeps its reviews, a judge's too
                writer.write(apply_reviews(row, reviews, settings.k, judge=run_judge(manifest)))
                written += 1
                if progress:
                    progress("cases", written, len(jobs))
        finally:
            writer.close()
    except (Exception, KeyboardInterrupt) as exc:
        _close_quietly(system)  # calls still in flight fail now instead of holding the exit
        _write_quietly(run_dir / MANIFEST, manifest.model_copy(update={"ended_at": utc_now()}))
        raise RunStopped(run_dir, written, len(jobs), exc) from exc
    manifest = manifest.model_copy(update={"ended_at": utc_now()})
    rows, standing = judged_passed(read_rows(run_dir), manifest)  # --judged-passed: once the judge earns it
    if standing is not None:
        write_rows(run_dir, rows)
    summary = summarize(rows, manifest.metrics, manifest.collection.to_json(), judged=standing)
    write_json(run_dir / SUMMARY, summary.to_json())
    write_replay(run_dir, rows, pages=pages, min_quote_words=settings.min_quote_words)
    manifest = manifest.model_copy(update={"status": "complete"})
    write_json(run_dir / MANIFEST, manifest.to_json())
    return RunResult(run_dir, summary, manifest, standing)


def _fresh_dir(path: str | Path) -> Path:
    path = Path(path)
    try:
        path.mkdir(parents=True)
    except FileExistsError:
        raise InputError(f"{path} already exists; a new run needs a new directory (or --resume it)") from None
    return path


def _close_quietly(system: System) -> None:
    """Close a system that can be closed (an HTTP system: its connections), on the way out of a stopped run."""
    close = getattr(system, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # a plug-in's close failing must not hide why the run stopped
            pass


def _write_quietly(path: Path, manifest: Manifest) -> None:
    """Best effort on the way out of a stopped run: a full disk must not hide why the run stopped."""
    try:
        write_json(path, manifest.to_json())
    except OSError:
        pass


# Settings that may change between an interrupted run and its resumption: they do not change any row.
_FREE_TO_CHANGE = {"out", "label", "workers", "timeout", "retries", "backoff", "host", "hosts", "cache_dir",
                   "answer_cache", "embed_host", "api_key_env"}


def _resumable(run_dir: Path, fresh: Manifest) -> tuple[Manifest, set[tuple[str, int]]]:
    """The saved manifest and the (case id, repeat) pairs already written; refuse if anything that decides a
    row changed since. A last line cut by a kill is dropped from the file before appending."""
    saved = read_manifest(run_dir)
    if saved.status == "complete":
        raise InputError(f"{run_dir}: this run is already complete; start a new one instead of --resume")
    changes = setup_changes(saved, fresh)
    if changes:
        raise InputError(f"{run_dir}: cannot resume, the run would mix two setups:\n  " + "\n  ".join(changes))
    _drop_partial_line(run_dir / ROWS)
    done = {row.key for row in read_rows(run_dir)}
    resumed = (*(saved.resumed_at or ()), utc_now())
    return saved.model_copy(update={"resumed_at": resumed}), done


def _carried_rows(source: Path, fresh: Manifest) -> list[Row]:
    """The rows of `source` that did not error, to carry into a rerun of its errored cases; refused when the
    run is not complete, has no errored row, or was made with another setup."""
    saved = read_manifest(source)
    if saved.status != "complete":
        raise InputError(f"{source}: this run is incomplete; finish it with {command('run', '--resume', source)}")
    changes = setup_changes(saved, fresh)
    if changes:
        raise InputError(f"{source}: cannot rerun its errored cases with another setup:\n  " + "\n  ".join(changes))
    rows = read_rows(source)
    if not any(row.errored for row in rows):
        raise InputError(f"{source}: no row errored; there is nothing to ask again")
    return [row for row in rows if not row.errored]


def setup_changes(saved: Manifest, fresh: Manifest) -> list[str]:
    """What differs between a saved run's setup and the one given now, in anything that decides a row: settings
    (but speed and place), the documents' and cases file's hashes, the prompt template."""
    before, now = saved.settings.to_json(), fresh.settings.to_json()
    defaults = RunSettings().to_dict()  # a setting newer than the saved run had its default there
    then = {k: absolute_path(v) if k in PATH_SETTINGS else v for k, v in (defaults | before).items()}  # older: relative
    changes = [f"settings.{k}: {then.get(k)!r} -> {v!r}" for k, v in now.items()
               if k not in _FREE_TO_CHANGE and then.get(k) != v]
    for key in ("inputs", "prompt_template"):
        if getattr(saved, key, None) != getattr(fresh, key, None):
            changes.append(f"{key} changed (documents, cases file or prompt template differ)")
    pypdf_then, pypdf_now = (m.versions.pypdf if m.versions else None for m in (saved, fresh))
    if pypdf_then and pypdf_then != pypdf_now:  # another pypdf extracts other page text: other passages and labels
        changes.append(f"pypdf {pypdf_then} -> {pypdf_now} (page text may differ); install pypdf=={pypdf_then} to "
                       "resume")
    return changes


def fresh_manifest(settings: RunSettings, documents: list[Document], argv: list[str] | None = None) -> Manifest:
    """The manifest a run with `settings` over `documents` would start with (before its system describes itself)."""
    return _manifest(settings, documents, argv)


def _described(system: System, spec: str) -> SystemRecord:
    """The system's `describe()` as the manifest's system section; a description of the wrong shape is named."""
    try:  # described(): raising, not a dict, values JSON cannot hold; then the shape the manifest reads
        return SystemRecord.model_validate(described(spec, system))
    except ValidationError as exc:
        raise InputError(f"--system {spec!r}: describe() must return a dict whose name, system and warnings are "
                         f"text ({field_problem(exc)})") from exc


def _drop_partial_line(path: Path) -> None:
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open_regular(path, "r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def _answer_all(system: System, jobs: list[tuple[Case, int]], settings: RunSettings,
                rules: ScoringRules) -> Iterator[Row]:
    """Yield rows in job order. A system with a host pool (the chatbot) spreads the jobs over its servers'
    worker slots and each row records the server that answered it; any other system runs `workers` jobs at once.
    A row is yielded when it and all rows before it are done."""
    timed = traits_of(system).timed_by_harness

    def one(job: tuple[Case, int], client: Any = None) -> Row:
        case, repeat = job
        start = time.perf_counter()
        result = _ask(system, case, repeat, client)
        elapsed_ms = (time.perf_counter() - start) * 1000
        result = _bounded(result, settings, timed_out=timed and elapsed_ms > settings.timeout * 1000,
                          elapsed_ms=elapsed_ms)
        return guarded_row(case, result, rules, elapsed_ms=elapsed_ms, repeat=repeat,
                           host=None if client is None else client.host)

    if isinstance(system, SeesQuestionsAhead) and callable(system.questions_ahead):  # the chatbot: batched vectors
        try:
            system.questions_ahead([case.question for case, _ in jobs])
        except Exception:  # noqa: BLE001 - a hint only: the run goes on as if the system had no such hook
            pass
    if isinstance(system, PooledSystem):
        for served in system.pool.imap(lambda client, job: one(job, client), jobs):
            yield served.value
        return
    if settings.workers == 1:
        yield from map(one, jobs)
        return
    yield from _in_order(one, jobs, settings.workers)


def _in_order(fn: Callable[[tuple[Case, int]], Row], jobs: list[tuple[Case, int]], workers: int) -> Iterator[Row]:
    """`fn` over `jobs` on `workers` daemon threads, yielded in job order. Leaving early (Ctrl-C, a stopped run)
    hands out no more jobs and waits for none: a call still in flight is abandoned, and ends with the process
    (a thread pool's executor would wait for it at exit, a minute against a slow service)."""
    results: list[Future[Row]] = [Future() for _ in jobs]
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(jobs)):
        todo.put(index)
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                index = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[index].set_result(fn(jobs[index]))
            except BaseException as exc:  # handed to the main thread, which decides
                results[index].set_exception(exc)

    for _ in range(min(workers, len(jobs))):
        threading.Thread(target=work, name="rag-eval-worker", daemon=True).start()
    try:
        for result in results:
            yield result.result()
    finally:
        stop.set()


def _ask(system: System, case: Case, repeat: int = 0, client: Any = None) -> SystemAnswer:
    """One answer, checked at the seam; a failure of this case alone becomes its error, one that would fail every
    case raises. With `client` (a server of the system's pool) the system answers through that server."""
    try:
        if client is not None and isinstance(system, PooledSystem):
            return checked_answer(to_answer(system.answer_with(case.question, case_id=case.id, repeat=repeat,
                                                               client=client)))
        return checked_answer(to_answer(system.answer(case.question, case_id=case.id)))
    except FATAL:
        raise
    except ValueError as exc:
        return SystemAnswer(error=f"the system's answer breaks the contract: {exc}")
    except SystemExit as exc:  # a plug-in must not end the run: this case failed, the others go on
        return SystemAnswer(error=f"the system called sys.exit({exc.code!r}) while answering; raise an exception "
                                  "instead")
    except Exception as exc:  # a plug-in's own failure on this question: its row says so, the run goes on
        return SystemAnswer(error=f"the system raised {type(exc).__name__}: {exc}")


def _bounded(result: SystemAnswer, settings: RunSettings, *, timed_out: bool, elapsed_ms: float) -> SystemAnswer:
    """`result` as an error when its answer or a passage is over --max-reply-chars, or it came after --timeout;
    its `raw` kept to --max-reply-chars characters (the body as a whole is bounded by --max-body-bytes)."""
    cap = settings.max_reply_chars
    sizes = [("answer", len(result.answer))] + [(f"retrieved.{i}.text", len(p.text))
                                                 for i, p in enumerate(result.retrieved)]
    field, size = max(sizes, key=lambda item: item[1])
    if result.error is None and size > cap:  # never store a runaway reply whole
        return SystemAnswer(error=f"the system's {field} holds {size} characters, over --max-reply-chars {cap}",
                            raw=result.raw[:2000], usage=result.usage)
    if result.error is None and timed_out:
        return SystemAnswer(error=f"the system took {elapsed_ms / 1000:.1f} s, over --timeout "
                                  f"{settings.timeout:g} s", raw=result.raw[:cap])
    return result.model_copy(update={"raw": result.raw[:cap]}) if len(result.raw) > cap else result


def _collection(documents: list[Document], system: System) -> CollectionRecord:
    return CollectionRecord(documents=len(documents), pages=sum(len(d.pages) for d in documents),
                            chunks=getattr(system, "chunk_count", None),
                            empty_pages={d.doc_id: tuple(d.empty_pages) for d in documents if d.empty_pages})


def _manifest(settings: RunSettings, documents: list[Document], argv: list[str] | None) -> Manifest:
    """Everything but the system's description, which needs the system (added by the caller)."""
    found = prompt_template_for(settings.system, settings.prompt)  # checked on resume before the index build
    template = None if found is None else PromptTemplateRecord(source=found.source, sha256=found.sha256)
    return Manifest(
        format=MANIFEST_FORMAT, run_id="", started_at=utc_now(), package_version=__version__,
        git_commit=_git_commit(), command=argv, versions=VersionsRecord.model_validate(software_versions()),
        settings=RunSettingsRecord.model_validate(settings.recorded()), metrics=metric_names(settings.k),
        inputs={"cases": {"path": str(Path(settings.cases).absolute()), "sha256": file_sha256(settings.cases)},
                "documents": [{"doc_id": d.doc_id, "sha256": d.sha256, "pages": len(d.pages)} for d in documents]},
        prompt_template=template)


def _git_commit() -> str | None:
    """The commit of the checkout this package runs from, when it is one."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
