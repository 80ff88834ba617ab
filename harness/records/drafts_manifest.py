"""The manifests `rag-eval draft` writes: `DraftsManifest` beside a drafts file (`<drafts stem>.manifest.json`:
settings, server and models, selection, call counts) and `CasesManifest` beside a cases file written from drafts
(which drafts and documents, and the versions that wrote its labels). Reading and writing them:
`harness.drafting.manifest`.

Both carry a format version (`format`, `DRAFTS_MANIFEST_FORMAT`) and refuse keys they do not know. A file without
one was written before format versions (format 1): it reads with today's fields, what it lacks at their defaults and
its unknown keys left out; a newer format than this code knows is refused. `settings` and `server` stay open: they
hold every drafting setting and what the model server said of itself, more in later versions.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field

from .base import _Record
from .run_files import VersionsRecord

__all__ = ["DRAFTS_MANIFEST_FORMAT", "CasesManifest", "DraftsManifest", "SkippedPage"]

DRAFTS_MANIFEST_FORMAT: Final = 2  # 1: no `format` key (before versions); 2: `format` written


class SkippedPage(_Record):
    """A page the selection left out, and why (too few words, say)."""

    source_id: str
    reason: str


class DraftsManifest(_Record):
    """`<drafts stem>.manifest.json`: what drafted the file. `rag-eval draft cases` and `review` read the documents
    folder from `settings.docs`."""

    format: int = Field(default=1, ge=1, description="DRAFTS_MANIFEST_FORMAT; absent: 1")
    package_version: str | None = None
    versions: VersionsRecord = Field(default_factory=VersionsRecord)
    written_at: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict, description="every drafting setting, folders absolute")
    server: dict[str, Any] = Field(default_factory=dict, description="the model server and its models")
    pages: list[str] = Field(default_factory=list, description="the pages drafted from, in selection order")
    skipped_pages: list[SkippedPage] = Field(default_factory=list)
    chat_calls: int = Field(default=0, ge=0)
    pages_from_cache: int = Field(default=0, ge=0)
    drafts: int = Field(default=0, ge=0, description="drafts in the file")


class CasesManifest(_Record):
    """`<cases stem>.manifest.json` beside a cases file written from drafts: which drafts and documents, and the
    versions that wrote its labels (a later label check under another pypdf names the mismatch)."""

    format: int = Field(default=1, ge=1, description="DRAFTS_MANIFEST_FORMAT; absent: 1")
    written_by: str = "rag-eval draft cases"
    versions: VersionsRecord = Field(default_factory=VersionsRecord)
    written_at: str | None = None
    drafts: str | None = Field(default=None, description="the drafts file, absolute")
    docs: str | None = Field(default=None, description="the documents folder, absolute")
