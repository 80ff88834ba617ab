"""The drafts file's manifest, `<drafts stem>.manifest.json` beside it: settings, server and models, selection,
call counts. `rag-eval draft cases` and `review` read the documents folder from it."""

from __future__ import annotations

import json
from pathlib import Path

from pdfrag import __version__
from pdfrag.store import atomic_write_text
from pdfrag.versions import software_versions

from ..cases import manifest_beside
from ..errors import InputError
from ..settings import absolute_path
from .pipeline import DraftRun


def manifest_path(drafts_path: str | Path) -> Path:
    return manifest_beside(drafts_path)


def write_cases_manifest(cases_path: str | Path, *, drafts_path: str | Path, docs: str, written_at: str) -> Path:
    """The manifest beside a cases file written from drafts: which drafts and documents, and the versions that
    wrote its labels (a later label check under another pypdf names the mismatch)."""
    data = {"written_by": "rag-eval draft cases", "versions": software_versions(), "written_at": written_at,
            "drafts": absolute_path(str(drafts_path)), "docs": absolute_path(docs)}
    path = manifest_beside(cases_path)
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


def write_manifest(run: DraftRun, written_at: str) -> Path:
    data = {"package_version": __version__, "versions": software_versions(), "written_at": written_at,
            "settings": _absolute_paths(run.settings.to_dict()),
            "server": run.server, "pages": run.selection.page_ids(),
            "skipped_pages": [{"source_id": s, "reason": r} for s, r in run.selection.skipped],
            "chat_calls": run.chat_calls, "pages_from_cache": run.pages_from_cache, "drafts": len(run.drafts)}
    path = manifest_path(run.settings.out)
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


def _absolute_paths(settings: dict) -> dict:
    """The settings as recorded: the documents, output and cache folders absolute, so `draft cases` and `review`
    find the documents from any folder, and two manifests name the same folder the same way."""
    return settings | {k: absolute_path(settings[k]) for k in _PATHS if k in settings}


_PATHS = ("docs", "out", "cache_dir")


def read_manifest(drafts_path: str | Path) -> dict:
    """The manifest beside a drafts file, or {} when there is none (a drafts file copied on its own)."""
    path = manifest_path(drafts_path)
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable drafts manifest ({exc}); delete it and pass --docs") from exc
