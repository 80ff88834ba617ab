"""The file steps of `rag-eval draft`, each one call for the command: draft into the drafts file and its manifest;
read the settings recorded beside it and open its documents; write the judge's or a sheet's decisions into it;
write a cases file from it only once the cases pass the label check. No printing: the command shows what these
return, and their problems are InputErrors."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pdfrag.chunking import Chunk
from pdfrag.page_cache import PageCache
from pdfrag.pdfs import Document, read_documents
from pdfrag.safe_files import atomic_write_text

from ..cases import load_checked_cases
from ..errors import InputError, command
from ..judge.run import JudgeSettings
from ..runs import utc_now
from .collection import Collection
from .decisions import import_csv, reverify
from .export import to_cases
from .judging import DraftJudging, judge_drafts
from .manifest import drafts_manifest_json, manifest_path, write_cases_manifest, write_manifest
from .pipeline import DraftRun, Progress, run_drafting
from .records import Draft, read_drafts, write_drafts
from .settings import DraftSettings

__all__ = ["CasesWritten", "Opened", "draft_into_file", "failed_again_text", "import_sheet", "judge_into_file",
           "left_out_text", "open_documents", "recorded_settings", "skipped_pages", "write_cases",
           "write_checked_cases"]


def draft_into_file(settings: DraftSettings, *, progress: Progress | None = None) -> tuple[DraftRun, Path]:
    """Draft and verify (`run_drafting`), write the drafts to `settings.out` and the manifest beside them; the
    run and the manifest's path."""
    run = run_drafting(settings, progress=progress)
    write_drafts(settings.out, list(run.drafts))
    return run, write_manifest(run, utc_now())


def recorded_settings(drafts: str, docs: str | None) -> DraftSettings:
    """The drafting settings recorded beside the drafts file, with `docs` (--docs) overriding the documents."""
    saved = drafts_manifest_json(drafts).get("settings", {})
    if not saved and not docs:
        raise InputError(f"{drafts} has no manifest beside it to say which documents it was drafted from; "
                         "pass --docs")
    values = {k: v for k, v in saved.items() if k in DraftSettings.__dataclass_fields__}
    for name in ("pages", "hosts"):
        if name in values:
            values[name] = tuple(values[name])
    if docs:
        values["docs"] = docs
    elif not Path(values["docs"]).exists():
        raise InputError(f"{values['docs']} (the documents named in {manifest_path(drafts)}) does not exist "
                         "from here; run from the folder you drafted in, or pass --docs")
    return DraftSettings(**values)


def skipped_pages(drafts: str) -> list[tuple[str, str]]:
    """(page id, why) of each page the drafting skipped, as its manifest records them (none without one)."""
    return [(s["source_id"], s["reason"]) for s in drafts_manifest_json(drafts).get("skipped_pages", ())]


@dataclass(frozen=True)
class Opened:
    """The documents of a drafts file as the checks see them; `cache_problem`: the page cache's warning, if any."""

    documents: list[Document]
    collection: Collection
    cache_problem: str | None


def open_documents(settings: DraftSettings) -> Opened:
    """Read the documents (through the page cache under `settings.cache_dir`) and chunk them as drafted."""
    cache = PageCache.at(settings.cache_dir)
    documents = read_documents(settings.docs, cache=cache)
    return Opened(documents, Collection.of(documents, settings.chunking()), cache.problem)


def judge_into_file(drafts: str, pages: dict[str, str], settings: JudgeSettings, *,
                    progress: Callable[[int, int, int], None] | None = None) -> DraftJudging:
    """The judge's accept/reject on each answerable draft that passed verification, written into the drafts
    file (`judge_drafts`)."""
    judged = judge_drafts(read_drafts(drafts), pages, settings, progress=progress)
    write_drafts(drafts, list(judged.drafts))
    return judged


def import_sheet(drafts: str, sheet: str, read: list[Draft], collection: Collection, settings: DraftSettings, *,
                 by: str, by_is_given: bool) -> list[Draft]:
    """The decisions (and edits, resolutions) of a CSV sheet applied to the drafts `read` from `drafts`, and
    written there; the drafts after."""
    after = import_csv(sheet, read, collection, by=by, at=utc_now(), limits=settings.limits(),
                       abstain_below=settings.abstain_below, by_is_given=by_is_given)
    write_drafts(drafts, after)
    return after


@dataclass(frozen=True)
class CasesWritten:
    """What `draft cases` wrote: the number of cases, why the other drafts were left out (reason -> count), how
    many drafts marked passed failed the checks run again (left out too), and the manifest beside the cases."""

    cases: int
    left_out: dict[str, int]
    failed_again: int
    manifest: Path


def write_cases(drafts: str, out: Path, settings: DraftSettings, opened: Opened, *,
                include_unreviewed: bool = False) -> CasesWritten:
    """The drafts that pass the checks run again against the documents, and that people accepted (with
    `include_unreviewed`, also those no one has seen), written to `out` as a label-checked cases file with its
    manifest. InputError when no draft is left to write."""
    read = read_drafts(drafts)
    checked = [reverify(d, opened.collection, limits=settings.limits(), abstain_below=settings.abstain_below)
               for d in read]
    failed_again = sum(a.verification.passed and not b.verification.passed for a, b in zip(read, checked))
    export = to_cases(checked, include_unreviewed=include_unreviewed)
    if not export.cases:
        again = failed_again_text(failed_again, drafts, settings.docs)
        raise InputError(f"{drafts}: no draft to write ({left_out_text(export.left_out)}); review them with "
                         f"`{command('draft', 'review', drafts)}`, or pass --include-unreviewed"
                         + (f"; {again}" if again else ""))
    write_checked_cases(out, export.cases, opened.documents, list(opened.collection.chunks),
                        written_by=manifest_path(drafts))
    manifest = write_cases_manifest(out, drafts_path=drafts, docs=settings.docs, written_at=utc_now())
    return CasesWritten(len(export.cases), export.left_out, failed_again, manifest)


def failed_again_text(failed_again: int, drafts: str, docs: str) -> str:
    """What it means that drafts marked passed failed the checks run again ("" when none did)."""
    if not failed_again:
        return ""
    return (f"{failed_again} draft(s) marked passed in {drafts} failed the checks against {docs} when run again "
            "and were left out (edited by hand, or other documents?)")


def write_checked_cases(out: Path, cases: Sequence[dict], documents: list[Document], chunks: list[Chunk], *,
                        written_by: Path) -> None:
    """Write `cases` to `out` beside the target and check them as `rag-eval check` would, then move them into
    place: a cases file that would fail the label check is never left behind (InputError, naming `out`)."""
    staged = out.with_name(f".{out.name}.{os.getpid()}.staged")
    atomic_write_text(staged, "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    try:
        load_checked_cases(staged, documents, chunks, written_by=written_by)
        os.replace(staged, out)
    except InputError as exc:
        raise InputError(f"{str(exc).replace(str(staged), str(out))}\n{out} was not written") from exc
    finally:
        staged.unlink(missing_ok=True)


def left_out_text(counts: dict[str, int]) -> str:
    """The drafts left out of a cases file, by reason: `2 rejected by a human, 1 failed verification`, or `none`."""
    return ", ".join(f"{n} {why}" for why, n in counts.items()) or "none"
