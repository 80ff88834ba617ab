"""The files of `rag-eval draft`: the drafting settings recorded beside a drafts file, and a cases file written
from drafts only once it passes the label check. No printing: callers show what these return or raise."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from pdfrag.chunking import Chunk
from pdfrag.pdfs import Document
from pdfrag.store import atomic_write_text

from ..cases import load_checked_cases
from ..errors import InputError
from .manifest import manifest_path, read_manifest
from .settings import DraftSettings

__all__ = ["left_out_text", "recorded_settings", "write_checked_cases"]


def recorded_settings(drafts: str, docs: str | None) -> DraftSettings:
    """The drafting settings recorded beside the drafts file, with `docs` (--docs) overriding the documents."""
    saved = read_manifest(drafts).get("settings", {})
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
