"""Row warnings counted by kind across a run, with the likely cause when most rows share one.

A warning on every row (page ids that look 0-based, source ids without their subfolder) means the whole run
measured nothing, while hit@k just reads 0.000. The run's terminal summary and the top of the report show these
counts so that the setup error is seen before the numbers are read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..records import REVIEW_WARNINGS, AnyRow

MOST = 0.5  # a kind on more than this share of the rows gets its likely cause


@dataclass(frozen=True)
class _Kind:
    key: str
    pattern: re.Pattern[str]
    label: str
    cause: str


# The reviewer warnings (`harness.records.REVIEW_WARNINGS`, each "kind: ..."): no check fails them, a reviewer
# should look. Their label and likely cause here; their kinds and order come from the records.
_REVIEW_TEXT = {
    "empty answer": ("empty answer: an empty answer not marked as abstaining",
                     "the system returns an empty answer instead of abstaining: mark it as abstaining, or find why "
                     "it is empty"),
    "duplicate citation": ("duplicate citation: the same source id and quote cited twice",
                           "the system repeats its citations: citation counts and the reasons count each once"),
    "quotes not checked": ("quotes not checked: the saved layout carries no quotes (quote_valid and grounded are n/a)",
                           "save the outputs as JSONL with metadata.citations (docs/your-system.md) so each quote is "
                           "checked"),
    "negated fact": ("negated fact: a negation shortly before a fact the answer states (the fact rule still finds it)",
                     "read these answers: a fact under a negation may say the opposite"),
    "instruction-like text": ("instruction-like text in an answer (it speaks to a grader, not to the user)",
                              "the answers speak to a grader: a prompt injection in the documents or the system's "
                              "prompt"),
}

_KINDS = (
    _Kind("zero_based", re.compile(r"its text does not occur on that page; it is on .* \(0-based page numbers\?\)"),
          "a retrieved passage's text is on the page before the one its id names",
          "page numbers look 0-based: add 1 to the page of every source id (pages count from 1)"),
    _Kind("no_such_page", re.compile(r"^retrieved .*: no such page in the documents"),
          "a retrieved passage's id names no page of the documents",
          "source ids are <path relative to --docs>#p<page from 1>: check the path (a loader's file name alone, "
          "such as LlamaIndex's file_name, drops the subfolder) and the page numbering"),
    _Kind("text_not_on_page", re.compile(r"its text does not occur on that page"),
          "a retrieved passage's text does not occur on the page its id names",
          "the system's passages are not the page text pypdf extracts here: another PDF reader, changed text, "
          "or ids that point at the wrong file"),
    *(_Kind(kind, re.compile(f"^{re.escape(kind)}:"), *_REVIEW_TEXT[kind]) for kind in REVIEW_WARNINGS),
)


@dataclass(frozen=True)
class WarningCount:
    """One kind of row warning: how many rows carry it, how many times it occurs, one example, and the likely
    cause when it is on most rows (else None)."""

    kind: str
    label: str
    rows: int
    occurrences: int
    example: str
    cause: str | None


def warning_kind(warning: str) -> _Kind | None:
    """The known kind a warning text belongs to, or None (then the text itself is its kind)."""
    return next((k for k in _KINDS if k.pattern.search(warning)), None)


def count_warnings(rows: Sequence[AnyRow]) -> tuple[WarningCount, ...]:
    """Every kind of warning in `rows`, most rows first."""
    seen: dict[str, list] = {}  # key -> [kind or None, rows, occurrences, example]
    for row in rows:
        on_row = set()
        for warning in row.warnings:
            kind = warning_kind(warning)
            key = kind.key if kind else warning
            entry = seen.setdefault(key, [kind, 0, 0, warning])
            entry[2] += 1
            if key not in on_row:
                on_row.add(key)
                entry[1] += 1
    counts = [WarningCount(key, kind.label if kind else example, n_rows, n, example,
                           kind.cause if kind and n_rows > MOST * len(rows) else None)
              for key, (kind, n_rows, n, example) in seen.items()]
    return tuple(sorted(counts, key=lambda c: (-c.rows, c.kind)))


def warning_lines(counts: Sequence[WarningCount], total_rows: int) -> list[str]:
    """The counts as plain lines (the caller escapes them for its medium): a heading, one line per kind with
    an example, and the likely cause under a kind most rows share."""
    if not counts:
        return []
    lines = [f"row warnings by kind (rows with it / {total_rows} rows):"]
    for c in counts:
        lines.append(f"  {c.rows}/{total_rows} rows ({c.occurrences} times): {c.label}")
        if c.example != c.label:
            lines.append(f"    e.g. {c.example}")
        if c.cause:
            lines.append(f"    likely cause: {c.cause}")
    return lines
