"""Rescore a saved run against a corrected cases file: no model call, a new run directory naming its source.

Each row keeps what the system did (retrieved passages, answer status, model answer, citations, usage, human
review) and gets its labels (`expected`, `tags`) from the new cases file; metrics, fact results, quote
validation and failure reasons are recomputed by `harness.rows.score_row`, the same function a live run uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdfrag.text import normalize

from ..cases import Case, load_cases
from ..errors import InputError
from ..judged.standing import judged_passed
from ..records import Manifest, Row, Summary
from ..rows import score_row
from ..runs import (
    MANIFEST,
    SUMMARY,
    RowWriter,
    file_sha256,
    new_run_dir,
    read_manifest,
    read_rows,
    read_summary,
    utc_now,
    write_json,
)
from ..summary import summarize

__all__ = ["RescoreResult", "rescore_run"]


@dataclass(frozen=True)
class RescoreResult:
    """The new run directory, its summary and manifest, and the ids of new cases the source run never answered."""

    run_dir: Path
    summary: Summary
    manifest: Manifest
    unanswered_cases: tuple[str, ...]


def rescore_run(run_dir: str | Path, cases_path: str | Path, *, out: str | Path | None = None,
                label: str | None = None, argv: list[str] | None = None) -> RescoreResult:
    """Write a rescored copy of `run_dir` into a new run directory under `out` (default: beside the source).
    Every case of the run must be in the new file with the same question; all problems are reported at once."""
    source = Path(run_dir)
    manifest, rows = read_manifest(source), read_rows(source)
    cases = {c.id: c for c in load_cases(cases_path)}
    _check(rows, cases, cases_path, manifest)
    ks = manifest.ks
    new_rows = [score_row(r, cases[r.case_id], ks) for r in rows]  # the review is carried over
    new_rows, standing = judged_passed(new_rows, manifest)  # as the source run asked: once its judge earns it
    target = new_run_dir(out if out is not None else source.parent,
                         label or f"{manifest.settings.label or 'run'}-rescored")
    new_manifest = manifest.model_copy(update={
        "run_id": target.name, "status": "incomplete", "started_at": utc_now(), "ended_at": None, "command": argv,
        "rescored_from": {"run_id": manifest.run_id or source.name, "path": str(source.resolve())},
        "inputs": manifest.inputs | {"cases": {"path": str(cases_path), "sha256": file_sha256(cases_path)}},
    })
    write_json(target / MANIFEST, new_manifest.to_json())
    writer = RowWriter(target)
    try:
        for row in new_rows:
            writer.write(row)
    finally:
        writer.close()
    old = read_summary(source)
    summary = summarize(read_rows(target), manifest.metrics, manifest.collection.to_json(),
                        na_as_pass=old.na_as_pass if old else False, judged=standing)
    write_json(target / SUMMARY, summary.to_json())
    # A rescored copy of an interrupted run is just as incomplete as its source.
    new_manifest = new_manifest.model_copy(update={"status": manifest.status, "ended_at": utc_now()})
    write_json(target / MANIFEST, new_manifest.to_json())
    answered = {r.case_id for r in rows}
    return RescoreResult(target, summary, new_manifest, tuple(i for i in cases if i not in answered))


def _check(rows: list[Row], cases: dict[str, Case], cases_path: str | Path, manifest: Manifest) -> None:
    """Every case of the run is in the new file with the same question, and every evidence page exists in the
    documents the run saw (page counts from its manifest; quotes cannot be checked without the PDFs)."""
    ids = list(dict.fromkeys(r.case_id for r in rows))
    pages = {d["doc_id"]: d["pages"] for d in manifest.inputs.get("documents", ())}
    unknown = sorted({e.source_id for c in cases.values() for e in c.evidence
                      if pages.get(e.source_id.rsplit("#p", 1)[0], 0) < int(e.source_id.rsplit("#p", 1)[1])})
    missing = [i for i in ids if i not in cases]
    changed = [i for i in ids if i in cases and normalize(cases[i].question) !=
               normalize(next(r.question for r in rows if r.case_id == i))]
    problems = []
    if unknown:
        problems.append(f"evidence names pages the run's documents do not have: {', '.join(unknown)}")
    if missing:
        problems.append(f"{len(missing)} case(s) of the run are missing from {cases_path}: {', '.join(missing)}")
    if changed:
        problems.append(f"{len(changed)} case(s) changed their question, so the stored answers do not answer "
                        f"them; run the evaluation again for: {', '.join(changed)}")
    if problems:
        raise InputError("cannot rescore:\n  " + "\n  ".join(problems))
