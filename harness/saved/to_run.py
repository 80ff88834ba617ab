"""Offline scoring of saved outputs: the same rows, registry and run directory as a live run; no model calls.

Each saved case becomes a `Case` (labels) and a `SystemAnswer` (what the answerer did), judged by
`harness.rows.build_row` like any live answer. The tutorial's five checks (retrieval recall, citation precision,
claim support, key-point coverage, abstention) are entries of the one metric registry, never merged into one
score; `passed` is the tutorial's "passes" column. Claim annotations become a reviewed row's claims.

`score_to_run` is `rag-eval score`: each case is read (once, checked as it is read), scored and written in turn
(rows.jsonl through a temporary file renamed into place at the end), the summary accumulated as rows pass
(`harness.summary`), and of the failed cases the first `FAILED_SHOWN` kept with their count; memory does not grow
with the rows. Bad input is one InputError at the end of the reading, and the run directory begun is removed.
`score_saved` and `score_outputs` return every row in memory (small inputs, tests), from the same row builder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdfrag import __version__
from pdfrag.safe_files import atomic_write_text, atomic_writer
from pdfrag.versions import software_versions

from ..chart import fmt, svg_bars
from ..errors import command
from ..metrics.registry import PASS_CHECKS, REGISTRY, TUTORIAL_CHECKS, metric_names
from ..records import MANIFEST_FORMAT, Manifest, Row, Summary, VersionsRecord, in_bulk
from ..runs import MANIFEST, ROWS, SUMMARY, new_run_dir, utc_now, write_json
from ..summary import Summarizer, summarize
from .case_rows import KS, Batch, Lexical, Setup, score_rows, scored_batches
from .layout import SavedCase, SavedChunk, SavedClaim, SavedOutputs, read_saved
from .outputs import InputFile

__all__ = ["CHECK_LABELS", "FAILED_SHOWN", "KS", "PASS_LABELS", "Sample", "ScoreResult", "ScoredRun", "chart_bars",
           "failed_table", "score_outputs", "score_rows", "score_saved", "score_to_run", "write_run"]

CHECK_LABELS = {name: REGISTRY[name].label for name in TUTORIAL_CHECKS}
# Every check `passed` reads, printed: the tutorial's five by their labels, then the harness's own by their names.
PASS_LABELS = CHECK_LABELS | {name: name for name in PASS_CHECKS if name not in CHECK_LABELS}
FAILED_TABLE, CHART = "failed.txt", "chart.svg"
FAILED_SHOWN = 50  # failed cases shown with their checks and reasons; every row: `rag-eval export`
LEXICAL_SHOWN = 20  # case ids named as scored with the lexical retriever's ids


@dataclass(frozen=True)
class Sample:
    """The first few of many (in order), and how many there were."""

    items: tuple[Any, ...]
    total: int


@dataclass(frozen=True)
class ScoreResult:
    """One row per case in the cases file's order, their summary, the manifest to write, and warnings about
    the inputs (e.g. no claims file: claim support cannot be scored)."""

    rows: tuple[Row, ...]
    summary: Summary
    manifest: Manifest
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.metrics.get("passed") != 1.0)


@dataclass(frozen=True)
class ScoredRun:
    """A scored run directory: its summary and manifest, the input warnings, the first failed rows (`failed`) and
    the first cases whose retrieved ids came from the lexical retriever (`lexical`), each with its count."""

    run_dir: Path
    summary: Summary
    manifest: Manifest
    warnings: tuple[str, ...]
    failed: Sample
    lexical: Sample


def score_outputs(saved: SavedOutputs, *, k: int = 2, na_as_pass: bool = False) -> ScoreResult:
    """Score loaded outputs, every row in memory."""
    return _in_memory(saved.with_claims(), saved.chunks, saved.has_claims, lambda: saved.files, k, na_as_pass)


def score_saved(cases_path: str | Path, chunks_path: str | Path | None = None,
                claims_path: str | Path | None = None, *, k: int = 2, na_as_pass: bool = False) -> ScoreResult:
    """Check saved outputs (CSV or JSONL, see `harness.saved.layout`) and score every case into memory; no model is
    called. `score_to_run` writes a run directory instead, in memory that does not grow with the cases."""
    stream = read_saved(cases_path, chunks_path, claims_path)
    return _in_memory(stream, stream.chunks, stream.has_claims, lambda: stream.files, k, na_as_pass)


@in_bulk
def _in_memory(cases: Iterable[tuple[SavedCase, Sequence[SavedClaim]]], chunks: Sequence[SavedChunk],
               has_claims: bool, files: Callable[[], Sequence[InputFile]], k: int, na_as_pass: bool) -> ScoreResult:
    rows = tuple(score_rows(cases, chunks, has_claims=has_claims, k=k))
    manifest = _manifest(files(), len(chunks), k, na_as_pass)
    summary = summarize(rows, manifest.metrics, manifest.collection.to_json(), na_as_pass=na_as_pass, stability=False)
    return ScoreResult(rows, summary, manifest, _warnings(has_claims))


def score_to_run(cases_path: str | Path, chunks_path: str | Path | None = None,
                 claims_path: str | Path | None = None, *, out: str | Path, label: str | None = None, k: int = 2,
                 na_as_pass: bool = False, workers: int = 1) -> ScoredRun:
    """`rag-eval score`: score saved outputs as they are read and checked, into a new run directory under `out`
    (rows, manifest, summary, the failed-case table and the chart), so compare, report, review and rescore work on
    it. With `workers` > 1 the cases are scored in batches by that many processes (`rag-eval score` asks
    `default_workers()`), the rows and the summary the same whatever their number; a script that asks for them
    must start its work under `if __name__ == "__main__":`, as Python's multiprocessing requires. Bad input is one
    InputError, and the directory begun for it is removed."""
    stream = read_saved(cases_path, chunks_path, claims_path)
    manifest = _manifest((), len(stream.chunks), k, na_as_pass)  # the files' hashes are known at the end
    setup = _setup(stream.chunks, stream.has_claims, k, manifest)
    batches = scored_batches(stream, setup, workers=workers)
    return _write(batches, setup, manifest, out, label, _warnings(stream.has_claims), na_as_pass,
                  lambda: stream.files)


def write_run(result: ScoreResult, out: str | Path, *, label: str | None = None) -> Path:
    """A run directory under `out` for rows scored in memory, as `score_to_run` writes it."""
    setup = _setup((), True, result.manifest.settings.lexical_k or 0, result.manifest)
    batch = Batch.of(result.rows, setup, Lexical.warning_of(result.manifest))
    return _write([batch], setup, result.manifest, out, label, result.warnings, result.summary.na_as_pass).run_dir


def _setup(chunks: Sequence[SavedChunk], has_claims: bool, k: int, manifest: Manifest) -> Setup:
    return Setup(tuple(chunks), has_claims, k, tuple(dict.fromkeys(manifest.metrics)), tuple(_SHORT), FAILED_SHOWN,
                 LEXICAL_SHOWN)


def _write(batches: Iterable[Batch], setup: Setup, manifest: Manifest, out: str | Path, label: str | None,
           warnings: tuple[str, ...], na_as_pass: bool,
           files: Callable[[], Sequence[InputFile]] | None = None) -> ScoredRun:
    """The run directory of the rows of `batches`; `files`, when given, are the inputs' records once the rows are
    read. Whatever stops the rows (bad input found at the end of the reading) removes the directory begun."""
    run_dir = new_run_dir(out, label or "score")
    try:
        return _written(run_dir, batches, setup, manifest.model_copy(update={"run_id": run_dir.name}), warnings,
                        na_as_pass, files)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # only this run's own files: it was made above
        raise


def _written(run_dir: Path, batches: Iterable[Batch], setup: Setup, manifest: Manifest, warnings: tuple[str, ...],
             na_as_pass: bool, files: Callable[[], Sequence[InputFile]] | None) -> ScoredRun:
    write_json(run_dir / MANIFEST, manifest.to_json())  # status incomplete until the last row is in
    summarizer = Summarizer(setup.names, na_as_pass=na_as_pass, stability=False)
    failed, lexical = _Sampler(setup.failed_kept), _Sampler(setup.lexical_kept)
    with atomic_writer(run_dir / ROWS) as fh:
        for batch in batches:
            fh.write(batch.text)
            for tally in batch.tallies:
                summarizer.add_tally(tally)
            failed.extend(batch.failed, batch.failed_count)
            lexical.extend(batch.lexical, batch.lexical_count)
    summary = summarizer.summary(manifest.collection.to_json())
    update: dict[str, Any] = {"status": "complete", "ended_at": utc_now()}
    if files is not None:
        update["inputs"] = _inputs(files())
    manifest = manifest.model_copy(update=update)
    scored = ScoredRun(run_dir, summary, manifest, warnings, failed.sample(), lexical.sample())
    write_json(run_dir / SUMMARY, summary.to_json())
    atomic_write_text(run_dir / FAILED_TABLE, failed_table(scored) + "\n")
    atomic_write_text(run_dir / CHART, svg_bars(chart_bars(summary), title=chart_title(summary)))
    write_json(run_dir / MANIFEST, manifest.to_json())
    return scored


class _Sampler:
    def __init__(self, keep: int):
        self.keep, self.total = keep, 0
        self.items: list[Any] = []

    def extend(self, items: Sequence[Any], count: int) -> None:
        """The first of `count` more (`items`: the first of them, in order)."""
        self.total += count
        self.items.extend(items[:max(0, self.keep - len(self.items))])

    def sample(self) -> Sample:
        return Sample(tuple(self.items), self.total)


def _manifest(files: Sequence[InputFile], chunks: int, k: int, na_as_pass: bool) -> Manifest:
    return Manifest(format=MANIFEST_FORMAT, run_id="", status="incomplete", started_at=utc_now(),
                    ended_at=utc_now(), package_version=__version__,
                    versions=VersionsRecord.model_validate(software_versions()),
                    settings={"k": list(KS), "lexical_k": k, "na_as_pass": na_as_pass},
                    system={"name": "saved outputs", "system": "saved outputs scored offline (rag-eval score)"},
                    inputs=_inputs(files), metrics=metric_names(KS),
                    collection={"chunks": chunks or None})


def _inputs(files: Sequence[InputFile]) -> dict[str, Any]:
    return {"saved": [f.to_json() for f in files]}


def _warnings(has_claims: bool) -> tuple[str, ...]:
    return () if has_claims else ("no claims file was found or given, so claim support is not scored (n/a for "
                                  "every case); pass --claims FILE or put claims.<ext> beside the cases file",)


def chart_bars(summary: Summary) -> list[tuple[str, float | None]]:
    """One (label, mean) bar per tutorial check."""
    return [(label, summary.mean(name)) for name, label in CHECK_LABELS.items()]


def chart_title(summary: Summary) -> str:
    na = "n/a counted as 1.0" if summary.na_as_pass else "n/a left out"
    return f"{summary.rows} cases, {summary.passes} pass every check ({na})"


# The failed-case table's column of each check that feeds `passed` (PASS_LABELS, in its order): a short name.
_SHORT = {name: {"retrieval_recall": "recall", "citation_precision": "citation", "claim_support": "claims",
                 "key_point_coverage": "points", "abstention": "abstain", "quote_valid": "quote"}.get(name, name)
          for name in PASS_LABELS}


def failed_table(scored: ScoredRun) -> str:
    """The failed cases (the first `FAILED_SHOWN`) with the value of every check `passed` reads, the columns that
    failed (`failed`: below 1, n/a never fails) and the reasons beneath each, under a line saying how many failed
    and, when not all are shown, how to get every row."""
    failed, total = scored.failed, scored.summary.rows
    if not failed.total:
        return f"failed cases: 0 of {total}"
    title = f"failed cases: {failed.total} of {total}"
    if failed.total > len(failed.items):
        title += (f" (the first {len(failed.items)} shown; every row: "
                  f"{command('export', scored.run_dir, '--csv', 'rows.csv')})")
    id_width = max(len("case"), *(len(r.case_id) for r in failed.items))
    widths = [max(5, len(short)) for short in _SHORT.values()]
    header = "  ".join([f"{'case':<{id_width}}", *(f"{s:>{w}}" for s, w in zip(_SHORT.values(), widths)), "failed"])
    lines = [title, header]
    for row in failed.items:
        values = (fmt(row.metrics.get(name)) for name in _SHORT)
        failing = ",".join(short for name, short in _SHORT.items() if (v := row.metrics.get(name)) is not None
                           and v < 1.0) or "-"
        lines.append("  ".join([f"{row.case_id:<{id_width}}", *(f"{v:>{w}}" for v, w in zip(values, widths)),
                                failing]))
        lines += [f"{'':<{id_width}}  - {reason}" for reason in row.failure_reasons]
    return "\n".join(lines)


