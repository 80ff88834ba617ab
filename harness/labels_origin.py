"""Which versions wrote a file's labels, and what to say when they differ from this installation's.

A manifest sits beside the file it describes, `<stem>.manifest.json`: `rag-eval draft` writes one beside the
drafts file and `rag-eval draft cases` one beside the cases file. Both record `versions` (this project, Python,
pypdf). pypdf's version decides the extracted page text, so a quote that was on its page under one pypdf can be
missing under another; a failing label check names the mismatch instead of leaving the user to guess.
"""

from __future__ import annotations

import json
from pathlib import Path

from chatbot.versions import pypdf_version


def manifest_beside(path: str | Path) -> Path:
    """`<stem>.manifest.json` beside `path`."""
    path = Path(path)
    return path.with_name(f"{path.stem}.manifest.json")


def recorded_pypdf(manifest: str | Path) -> str | None:
    """The pypdf version a manifest records, or None (no manifest, unreadable, or written before versions)."""
    try:
        data = json.loads(Path(manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    versions = data.get("versions") if isinstance(data, dict) else None
    found = versions.get("pypdf") if isinstance(versions, dict) else None
    return found if isinstance(found, str) else None


def pypdf_mismatch(manifest: str | Path) -> str | None:
    """A line for a failed label check when the labels were written under another pypdf, else None."""
    then, now = recorded_pypdf(manifest), pypdf_version()
    if then is None or then == now:
        return None
    return (f"note: these labels were written with pypdf {then} ({manifest}) and this is pypdf {now}; another "
            f"pypdf can extract other page text, so quotes may no longer be found: `pip install pypdf=={then}` "
            "(something you installed may have changed it), or check the labels again under this one")
