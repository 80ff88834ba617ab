"""The published JSON Schemas (`harness/schemas/*.json`), generated from the records."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from .answers import SystemReply
from .case_line import CaseLine
from .drafts import DraftLine
from .reviews import ReviewsLine
from .row import Row
from .saved_lines import SavedCase, SavedChunk, SavedClaim

_PUBLISHED: dict[str, tuple[Any, str]] = {  # a record class (a pydantic model or dataclass) and its title
    "case.schema.json": (CaseLine, "pdf-rag-eval labelled case (one JSON object per line of cases.jsonl)"),
    "row.schema.json": (Row, "pdf-rag-eval result row (one JSON object per line of rows.jsonl)"),
    "system_reply.schema.json": (SystemReply, "pdf-rag-eval HTTP system reply (POST {case_id, question})"),
    "saved_case.schema.json": (SavedCase, "Saved case (one line of cases.jsonl)"),
    "saved_chunk.schema.json": (SavedChunk, "Saved chunk (one line of chunks.jsonl)"),
    "saved_claim.schema.json": (SavedClaim, "Claim annotation (one line of claims.jsonl)"),
    "draft.schema.json": (DraftLine, "One drafted test case (a line of the drafts file written by `rag-eval draft`)"),
    "reviews_line.schema.json": (ReviewsLine, "A review or a resolution (one line of <cases stem>.reviews.jsonl)")}


def published_schemas() -> dict[str, dict]:
    """File name -> JSON Schema, generated from the records."""
    out = {}
    for name, (model, title) in _PUBLISHED.items():
        schema = TypeAdapter(model).json_schema()
        out[name] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                     "$id": f"https://pdf-rag-eval.invalid/schemas/{name}", **schema, "title": title}
    return out


def write_schemas() -> None:
    """Write `published_schemas()` into the package's `schemas/` folder."""
    folder = Path(str(resources.files("harness").joinpath("schemas")))
    for name, schema in published_schemas().items():
        (folder / name).write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
