"""Claim review through a spreadsheet: export a run's claims to CSV, import verdicts and resolutions back.

Columns (CSV_COLUMNS): case_id, answer_sha256, question, answer, cited_source_ids, retrieved_source_ids,
cited_quotes, reviewer, claim, verdict, source_id, note, resolution. A line is either one reviewer's verdict on one
claim (verdict filled, resolution blank), or the resolution of a claim on which reviewers disagree (resolution
filled with the verdict that counts, verdict blank; its source_id and note belong to the resolution). A blank
reviewer column means the importing reviewer. The three columns after `answer` are for reading, so that a claim
can be decided from the CSV alone: the ids the answer cites and the ids of the passages retrieved for it
(separated by " | "; `source_id` takes one of them), and each citation's quote. CSV files exported before the
reviewer, resolution or these columns existed import as they are.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from pdfrag.text import clip

from ..inputs import FileProblems, csv_text, open_csv
from ..records import Row, Verdict
from .book import Claim, ClaimState, Resolution, Review, ReviewBook, ReviewKey, claim_key
from .store import NO_CLAIMS, VERDICTS, distinct_answers, offered_claims, review_key

__all__ = ["CSV_COLUMNS", "RESOLVE_COLUMNS", "export_csv", "export_disagreements_csv", "import_csv",
           "passages_by_answer"]

CSV_COLUMNS = ("case_id", "answer_sha256", "question", "answer", "cited_source_ids", "retrieved_source_ids",
               "cited_quotes", "reviewer", "claim", "verdict", "source_id", "note", "resolution")
RESOLVE_COLUMNS = (*CSV_COLUMNS, "verdicts")  # `verdicts` is for reading: every reviewer's verdict and note
_SHA = re.compile(r"^[0-9a-f]{64}$")
_REQUIRED = ("case_id", "answer_sha256", "claim", "verdict", "source_id", "note")
_IDS_SEPARATOR = " | "
QUOTE_CHARS = 300  # of each citation's quote in `cited_quotes`: enough to judge by, short enough to read


def _verdict(text: str) -> Verdict:
    """A verdict cell already checked by `_line_ok`, as the record type."""
    return cast(Verdict, text.lower())


def export_csv(rows: Sequence[Row], reviews: ReviewBook, *, reviewer: str) -> str:
    """CSV text for `reviewer`, one line per claim: the answers they reviewed with their verdicts, the others
    with the offered sentence split and blank verdicts (other reviewers' verdicts are not shown, so that each
    reviews blind). An answer without claims gets one line with an empty claim (verdict `none` once reviewed)."""
    lines = [line for row in distinct_answers(rows) for line in _claim_lines(row, reviews, reviewer)]
    return csv_text(CSV_COLUMNS, lines)


def _answer_cells(row: Row) -> list[str]:
    """case_id to cited_quotes: the answer, the ids it cites, the ids retrieved for it and the cited quotes."""
    cited = _IDS_SEPARATOR.join(dict.fromkeys(c.source_id for c in row.answer.citations))
    retrieved = _IDS_SEPARATOR.join(dict.fromkeys(p.source_id for p in row.retrieved))
    quotes = _IDS_SEPARATOR.join(f'{c.source_id}: "{clip(c.quote, QUOTE_CHARS)}"'
                                 + ("" if c.valid is not False else f" (invalid: {c.reason})")
                                 for c in row.answer.citations)
    return [row.case_id, row.answer.answer_sha256, row.question, row.answer.model_answer, cited, retrieved, quotes]


def _claim_lines(row: Row, reviews: ReviewBook, reviewer: str) -> list[list[str]]:
    base = [*_answer_cells(row), reviewer]
    review = reviews.review_of(review_key(row), reviewer)
    if review is None:
        return [base + [sentence, "", "", "", ""] for sentence in offered_claims(row) or [""]]
    if not review.claims:
        return [base + ["", NO_CLAIMS, "", "", ""]]
    return [base + [c.claim, c.verdict, c.source_id or "", c.note, ""] for c in review.claims]


def _verdicts_text(state: ClaimState) -> str:
    return " | ".join(f"{name or '(unnamed)'}: {c.verdict}" + (f" by {c.source_id}" if c.source_id else "")
                      + (f" ({c.note})" if c.note else "") for name, c in state.reviews)


def export_disagreements_csv(rows: Sequence[Row], reviews: ReviewBook) -> str:
    """CSV text (RESOLVE_COLUMNS) with one line per claim on which reviewers disagree: every verdict in the
    `verdicts` column, the resolution blank to fill (or the current one, for a resolved claim)."""
    lines = []
    for row in distinct_answers(rows):
        for state in reviews.claim_states(review_key(row)) or []:
            if state.status not in ("disagreement", "resolved"):
                continue
            res = state.resolution if state.status == "resolved" else None
            lines.append([*_answer_cells(row), "", state.claim, "", (res.source_id or "") if res else "",
                          res.note if res else "", res.verdict if res else "", _verdicts_text(state)])
    return csv_text(RESOLVE_COLUMNS, lines)


@dataclass
class _Group:
    line: int
    claims: list[tuple[int, dict]] = field(default_factory=list)


def _cell(record: dict, name: str) -> str:
    return (record.get(name) or "").strip()


def import_csv(path: str | Path, *, reviewer: str, reviewed_at: str,
               known: Mapping[ReviewKey, Collection[str]] | None = None,
               book: ReviewBook | None = None) -> ReviewBook:
    """Reviews and resolutions from a CSV in the export layout. Verdict lines are grouped by (case_id,
    answer_sha256, reviewer); a group whose verdicts are all blank is still pending and skipped; otherwise every
    line needs a verdict, and `supported` needs a source_id. `known`, when given, maps each answer key of the run
    to the source ids of its passages: lines for other answers, or citing other passages, are problems. `book`,
    when given, holds the stored reviews: a resolution must name a claim its reviewers disagree on. Every problem
    is reported at once as file:line: field: message."""
    reader, problems = open_csv(path, _REQUIRED, CSV_COLUMNS, "the review CSV")
    groups: dict[tuple[str, str, str], _Group] = {}
    resolutions: list[tuple[int, Resolution]] = []
    start = 2
    for record in reader:
        line, start = start, reader.line_num + 1
        key = (_cell(record, "case_id"), _cell(record, "answer_sha256"))
        who = _cell(record, "reviewer") or reviewer
        if not _line_ok(record, key, line, problems, known):
            continue
        if _cell(record, "resolution"):
            resolutions.append((line, Resolution(*key, _cell(record, "claim"), _verdict(_cell(record, "resolution")),
                                                 _cell(record, "source_id") or None, _cell(record, "note"), who,
                                                 reviewed_at)))
        else:
            groups.setdefault((*key, who), _Group(line)).claims.append((line, record))
    reviews = [r for k, g in groups.items() if (r := _group_review(k, g, problems, reviewed_at))]
    imported = ReviewBook.of([*reviews, *(r for _, r in resolutions)])
    if book is not None:
        _check_resolutions(resolutions, book.merged(imported), problems)
    problems.raise_if_any("the review CSV")
    return imported


def _line_ok(record: dict, key: ReviewKey, line: int, problems: FileProblems,
             known: Mapping[ReviewKey, Collection[str]] | None) -> bool:
    before = len(problems.items)
    if not key[0]:
        problems.add(line, "case_id: empty")
    if not _SHA.match(key[1]):
        problems.add(line, "answer_sha256: expected 64 lowercase hex digits, as exported")
    elif known is not None and key[0] and key not in known:
        problems.add(line, f"answer_sha256: no row of this run has this answer for case {key[0]!r}; "
                           "export again from the run you are reviewing")
    verdict, resolution = _cell(record, "verdict").lower(), _cell(record, "resolution").lower()
    source = _cell(record, "source_id")
    if verdict and resolution:
        problems.add(line, "resolution: a line holds either a reviewer's verdict or a resolution; leave verdict "
                           "blank on a resolution line")
    elif resolution and resolution not in VERDICTS:
        problems.add(line, f"resolution: {record['resolution']!r} is not one of {', '.join(VERDICTS)} or blank")
    elif verdict and verdict not in (*VERDICTS, NO_CLAIMS):
        problems.add(line, f"verdict: {record['verdict']!r} is not one of {', '.join(VERDICTS)}, {NO_CLAIMS} "
                           "or blank")
    elif "supported" in (verdict, resolution) and not source:
        problems.add(line, "source_id: a supported claim needs the id of the passage that supports it")
    elif source and known is not None and key in known and source not in known[key]:
        problems.add(line, f"source_id: {source!r} is neither retrieved for this answer nor cited by it; give "
                           f"one id of retrieved_source_ids or cited_source_ids "
                           f"({', '.join(sorted(known[key])) or 'none'})")
    elif (verdict in VERDICTS or resolution) and not _cell(record, "claim"):
        problems.add(line, "claim: empty; write the claim, or use verdict none for an answer without claims")
    return len(problems.items) == before


def _group_review(key: tuple[str, str, str], group: _Group, problems: FileProblems, reviewed_at: str) -> Review | None:
    verdicts = [(line, _cell(r, "verdict").lower()) for line, r in group.claims]
    if all(not v for _, v in verdicts):
        return None
    who = f"case {key[0]!r}'s answer" + (f" by {key[2]}" if key[2] else "")
    if any(v == NO_CLAIMS for _, v in verdicts):
        if len(verdicts) > 1:
            problems.add(group.line, f"verdict: {NO_CLAIMS} must be the only line of {who}")
            return None
        return Review(key[0], key[1], (), key[2], reviewed_at)
    blank = [line for line, v in verdicts if not v]
    for line in blank:
        problems.add(line, f"verdict: blank while other claims of {who} have one; give every claim of this "
                           "answer a verdict, or none of them")
    seen: dict[str, int] = {}
    for line, r in group.claims:
        if (first := seen.setdefault(claim_key(r["claim"]), line)) != line:
            problems.add(line, f"claim: the same claim as line {first} of {who}")
    if blank or len(seen) < len(group.claims):
        return None
    claims = tuple(Claim(_cell(r, "claim"), _verdict(_cell(r, "verdict")), _cell(r, "source_id") or None,
                         _cell(r, "note")) for _, r in group.claims)
    return Review(key[0], key[1], claims, key[2], reviewed_at)


def _check_resolutions(resolutions: Sequence[tuple[int, Resolution]], book: ReviewBook, problems: FileProblems) -> None:
    for line, res in resolutions:
        states = {claim_key(s.claim): s for s in book.claim_states(res.key) or []}
        state = states.get(claim_key(res.claim))
        if state is None or state.status not in ("disagreement", "resolved"):
            problems.add(line, f"resolution: reviewers do not disagree on claim {res.claim!r} of case "
                               f"{res.case_id!r}" + ("" if state else " (no reviewer wrote it)")
                               + "; `rag-eval review RUN --resolve --export FILE` lists the claims to resolve")


def passages_by_answer(rows: Sequence[Row]) -> dict[ReviewKey, set[str]]:
    """Each answer key of a run's rows (errors left out) with the source ids a claim may cite: the passages
    retrieved for it and the ids the answer cites (the export's retrieved_source_ids and cited_source_ids)."""
    out: dict[ReviewKey, set[str]] = {}
    for row in rows:
        if not row.errored:
            ids = out.setdefault(review_key(row), set())
            ids.update(p.source_id for p in row.retrieved)
            ids.update(c.source_id for c in row.answer.citations)
    return out
