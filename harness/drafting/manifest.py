"""The drafts file's manifest, `<drafts stem>.manifest.json` beside it: settings, server and models, selection,
call counts; and the manifest beside a cases file written from drafts. Both are typed records with a format version
(`harness.records.drafts_manifest`). `rag-eval draft cases` and `review` read the documents folder from it."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from pdfrag import __version__
from pdfrag.safe_files import atomic_write_text
from pdfrag.versions import software_versions

from ..cases import manifest_beside
from ..errors import InputError
from ..records import VersionsRecord, field_problem, format_problem
from ..records.drafts_manifest import DRAFTS_MANIFEST_FORMAT, CasesManifest, DraftsManifest, SkippedPage
from ..settings import absolute_path
from .pipeline import DraftRun


def manifest_path(drafts_path: str | Path) -> Path:
    return manifest_beside(drafts_path)


def write_cases_manifest(cases_path: str | Path, *, drafts_path: str | Path, docs: str, written_at: str) -> Path:
    """The manifest beside a cases file written from drafts: which drafts and documents, and the versions that
    wrote its labels (a later label check under another pypdf names the mismatch)."""
    manifest = CasesManifest(format=DRAFTS_MANIFEST_FORMAT, versions=_versions(), written_at=written_at,
                             drafts=absolute_path(str(drafts_path)), docs=absolute_path(docs))
    path = manifest_beside(cases_path)
    atomic_write_text(path, json.dumps(manifest.to_json(), indent=2, ensure_ascii=False) + "\n")
    return path


def write_manifest(run: DraftRun, written_at: str) -> Path:
    manifest = DraftsManifest(
        format=DRAFTS_MANIFEST_FORMAT, package_version=__version__, versions=_versions(), written_at=written_at,
        settings=_absolute_paths(run.settings.to_dict()), server=run.server, pages=list(run.selection.page_ids()),
        skipped_pages=[SkippedPage(source_id=s, reason=r) for s, r in run.selection.skipped],
        chat_calls=run.chat_calls, pages_from_cache=run.pages_from_cache, drafts=len(run.drafts))
    path = manifest_path(run.settings.out)
    atomic_write_text(path, json.dumps(manifest.to_json(), indent=2, ensure_ascii=False) + "\n")
    return path


def _versions() -> VersionsRecord:
    return VersionsRecord.model_validate(software_versions())


def _absolute_paths(settings: dict) -> dict:
    """The settings as recorded: the documents, output and cache folders absolute, so `draft cases` and `review`
    find the documents from any folder, and two manifests name the same folder the same way."""
    return settings | {k: absolute_path(settings[k]) for k in _PATHS if k in settings}


_PATHS = ("docs", "out", "cache_dir")


def drafts_manifest_json(drafts_path: str | Path) -> dict:
    """The manifest beside a drafts file as JSON (`read_drafts_manifest`), or {} when there is none (a drafts file
    copied on its own)."""
    manifest = read_drafts_manifest(drafts_path)
    return {} if manifest is None else manifest.to_json()


def read_drafts_manifest(drafts_path: str | Path) -> DraftsManifest | None:
    """The manifest beside a drafts file, or None when there is none. One of format 1 (no `format`) reads with
    its unknown keys left out; a bad or newer one is an InputError naming the file and field."""
    path = manifest_path(drafts_path)
    if not path.exists():
        return None
    advice = "delete it and pass --docs"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable drafts manifest ({exc}); {advice}") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a readable drafts manifest (not a JSON object); {advice}")
    if (problem := format_problem(data, DRAFTS_MANIFEST_FORMAT)) is not None:
        raise InputError(f"{path}: {problem}")
    if "format" not in data:  # before format versions: what it holds beyond today's fields is not ours to check
        data = {k: v for k, v in data.items() if k in DraftsManifest.model_fields}
    try:
        return DraftsManifest.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{path}: not a readable drafts manifest ({field_problem(exc)}); {advice}") from exc
