"""The drafts file: one JSON object per line, a `DraftLine` (`harness.records.drafts`, which says what a draft holds;
schema: harness/schemas/draft.schema.json, generated from it). New files carry the format version on every line
(`DRAFTS_FORMAT`); files written before format versions, and before reviewers were kept apart, still read.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from pdfrag.safe_files import atomic_write_text

from ..inputs import FileProblems, schema_lines
from ..records import field_problem, format_problem
from ..records.drafts import (
    DECISION_STATUSES,
    DRAFT_KINDS,
    DRAFT_TYPES,
    DRAFTS_FORMAT,
    LINE,
    Decision,
    Draft,
    DraftLine,
    Provenance,
    Reason,
    Verification,
    effective_decision,
)

__all__ = ["DRAFTS_FORMAT", "KINDS", "STATUSES", "TYPES", "Decision", "Draft", "DraftLine", "Provenance", "Reason",
           "Verification", "draft_id", "draft_schema", "effective_decision", "read_drafts", "write_drafts"]

KINDS, STATUSES, TYPES = DRAFT_KINDS, DECISION_STATUSES, DRAFT_TYPES
_ID_UNSAFE = re.compile(r"[#\s]+")  # case ids may not hold spaces


def draft_id(kind: str, source_id: str, question: str, quote: str) -> str:
    """A stable id from what the draft says, so a rerun finds the same draft (and its decision) again."""
    digest = hashlib.sha256(f"{kind}\0{source_id}\0{question}\0{quote}".encode()).hexdigest()
    return f"{_ID_UNSAFE.sub('-', source_id)}-{digest[:8]}"


def draft_schema() -> dict:
    text = resources.files("harness").joinpath("schemas/draft.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def read_drafts(path: str | Path) -> list[Draft]:
    """Parse a drafts file, reporting every bad line at once with its line number."""
    path = Path(path)
    problems = FileProblems(str(path))
    drafts = []
    for number, data in schema_lines(path, draft_schema(), problems, what="drafts file", record="draft",
                                     id_field="draft_id"):
        if (problem := format_problem(data, DRAFTS_FORMAT)) is not None:
            problems.add(number, problem)
            continue
        try:
            drafts.append(LINE.validate_python(data).draft(with_reviews="reviews" in data))
        except ValidationError as exc:  # the schema is the record's own: only a check it cannot state
            problems.add(number, field_problem(exc))
    problems.raise_if_any("the drafts file")
    return drafts


def write_drafts(path: str | Path, drafts: list[Draft]) -> None:
    """Write every draft, one a line in the current format, atomically (a kill leaves the old file or the new
    one)."""
    atomic_write_text(path, "".join(json.dumps(DraftLine.of(d).to_json(), ensure_ascii=False) + "\n"
                                    for d in drafts))
