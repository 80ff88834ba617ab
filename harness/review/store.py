"""Human claim review, kept in a file beside the cases: `<cases stem>.reviews.jsonl`.

The file holds each reviewer's review of each answer and the resolutions of claims reviewers disagree on
(`harness/review/book.py` says how they combine). `claims_supported` of an answer = supported claims / all claims,
on the agreed, resolved or only verdicts; while any claim is in disagreement the answer stays pending (null), and
pending is never counted as supported. An answer reviewed as making no claims (an abstention, say) is reviewed with a
null value.

Lines of the file (`harness.records.reviews`, schema `harness/schemas/reviews_line.schema.json` generated from it):
a review `{"case_id", "answer_sha256", "claims": [...], "reviewer", "reviewed_at", "kind": "review", "format"}`, or a
resolution `{"case_id", "answer_sha256", "claim", "verdict", "source_id", "note", "resolver", "resolved_at", "kind":
"resolution", "format"}`. New files carry the format version on every line (`REVIEWS_FORMAT`); files from before
format versions (no `format`; a review without `kind`), and from before there were several reviewers, load as they
are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from pdfrag.safe_files import atomic_write_text, file_lock
from pdfrag.text import normalize, split_sentences

from ..inputs import FileProblems, json_lines
from ..judged.claims import judged_claims
from ..judged.standing import judged_passed
from ..records import AnyRow, Manifest, Row, Summary, format_problem
from ..records.reviews import REVIEWS_FORMAT, ResolutionLine, ReviewLine, reviews_line
from ..rows import with_review
from ..runs import SUMMARY, RunLock, read_manifest, read_rows, read_summary, utc_now, write_json, write_rows
from ..summary import summarize
from .book import (
    CLAIM_STATUSES,
    VERDICTS,
    Claim,
    ClaimState,
    Resolution,
    Review,
    ReviewBook,
    ReviewKey,
    as_book,
    claim_key,
    is_judge,
)

__all__ = ["CLAIM_STATUSES", "NO_CLAIMS", "VERDICTS", "Claim", "ClaimState", "Resolution", "Review", "ReviewBook",
           "ReviewKey", "add_reviews", "review_key", "apply_reviews", "apply_to_run", "as_book", "claim_key",
           "is_judge", "load_reviews", "read_reviews", "distinct_answers", "offered_claims", "reviews_path",
           "run_judge", "save_reviews", "sentence_split", "withheld"]

NO_CLAIMS = "none"  # CSV verdict, on a single line with an empty claim: the answer makes no claims


def review_key(row: AnyRow) -> ReviewKey:
    """(case_id, answer_sha256): what a review of the row's answer is keyed by."""
    return (row.case_id, row.answer.answer_sha256)


R = TypeVar("R", bound=AnyRow)  # a row read whole, or as the report reads it


def distinct_answers(rows: Sequence[R]) -> list[R]:
    """The rows whose answers can be reviewed, each answer once (errors left out; repeats with the same answer
    share a review)."""
    seen: set[ReviewKey] = set()
    out = []
    for row in rows:
        if row.error is None and review_key(row) not in seen:
            seen.add(review_key(row))
            out.append(row)
    return out


def reviews_path(cases_path: str | Path) -> Path:
    """`sample_docs/cases.jsonl` -> `sample_docs/cases.reviews.jsonl`."""
    path = Path(cases_path)
    return path.with_name(f"{path.stem}.reviews.jsonl")


def load_reviews(cases_path: str | Path, *, reviews_file: str | Path | None = None) -> ReviewBook:
    """The reviews beside a cases file (or in `reviews_file`); an empty book when the file does not exist yet."""
    return read_reviews(reviews_file if reviews_file is not None else reviews_path(cases_path))


def read_reviews(path: str | Path) -> ReviewBook:
    """Parse a reviews JSONL file, reporting every bad line at once. A later line for the same slot wins."""
    path = Path(path)
    if not path.exists():
        return ReviewBook()
    problems, records = FileProblems(str(path)), []
    for number, data in json_lines(path.read_text(encoding="utf-8-sig").splitlines(), problems):
        found = list(_line_problems(data))
        for message in found:
            problems.add(number, message)
        if not found:
            try:
                records.append(reviews_line(data))
            except ValidationError as exc:
                for message in _validation_problems(exc):
                    problems.add(number, message)
    problems.raise_if_any("the reviews file")
    return ReviewBook.of(records)


def _line_problems(data: object) -> Iterable[str]:
    if not isinstance(data, dict):
        yield "review: expected a JSON object"
    elif (problem := format_problem(data, REVIEWS_FORMAT)) is not None:
        yield problem
    elif data.get("kind", "review") not in ("review", "resolution"):
        yield f"kind: {data.get('kind')!r} is not review or resolution"


def _validation_problems(exc: ValidationError) -> Iterable[str]:
    """Each problem of a refused line as `field.path: message` (a check across fields names its field itself)."""
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        yield f"{where}: {message}" if where else message


def add_reviews(path: str | Path, records: Iterable[Review | Resolution]) -> ReviewBook:
    """Add reviews or resolutions to the reviews file and return everything it now holds. The file is re-read
    under a lock first, so two reviewers saving at the same time both keep their work."""
    path = Path(path)
    with file_lock(path.with_name(path.name + ".lock")):
        book = read_reviews(path).with_records(records)
        save_reviews(path, book)
    return book


def save_reviews(path: str | Path, reviews: ReviewBook | Mapping[object, Review]) -> None:
    """Rewrite the reviews file atomically, one record a line in the current format, sorted by case id, answer hash
    and reviewer."""
    lines = [json.dumps((ReviewLine.of(r) if isinstance(r, Review) else ResolutionLine.of(r)).to_json(),
                        ensure_ascii=False) for r in as_book(reviews).records()]
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def apply_reviews(row: Row, reviews: ReviewBook | Mapping[object, Review], ks: Sequence[int], *,
                  judge: str | None = None) -> Row:
    """`row` with the claims of its answer's reviews (each claim's state across human reviewers, see ClaimState)
    and the claim metrics from them; a claim in disagreement keeps it pending with claims_supported null. With
    `judge` (a judge reviewer name), also the judged claims from that judge's review (`harness/judged/`). With no
    review of its answer, and for a row with an error, `row` is returned unchanged: it keeps the review it
    carries, which is about its own answer (e.g. the claims file of a scored run)."""
    book = as_book(reviews)
    states = book.claim_states(review_key(row))
    judged_by = book.judge_review(review_key(row), judge) if judge else None
    judged = judged_claims(states, judged_by.reviewer if judged_by else None, judged_by.claims if judged_by else ())
    if states is None and judged is None:
        return row
    claims = [s.to_record() for s in states] if states is not None else row.claims
    return with_review(row, claims, ks, judged=judged)


def apply_to_run(run_dir: str | Path, reviews: ReviewBook | Mapping[object, Review]) -> Summary:
    """Rewrite a run's rows with `reviews` applied and its summary recomputed from them; returns the summary."""
    run_dir = Path(run_dir)
    with RunLock(run_dir):  # a run still writing rows must not lose them to this rewrite
        return rewrite_run(run_dir, read_manifest(run_dir), reviews)


def apply_file_to_run(run_dir: str | Path, path: str | Path, *, wait_s: float) -> Summary:
    """Apply the reviews file as it is once the run lock is held (waiting up to `wait_s` seconds for another
    importer or a run still writing): of two reviewers importing at once, the one applying last applies both."""
    run_dir = Path(run_dir)
    lock = RunLock(run_dir).acquire(utc_now(), wait_s=wait_s)
    try:
        return rewrite_run(run_dir, read_manifest(run_dir), read_reviews(path))
    finally:
        lock.release()


def rewrite_run(run_dir: Path, manifest: Manifest, reviews: ReviewBook | Mapping[object, Review]) -> Summary:
    """`apply_to_run` for a caller that holds the run lock and has read the run's manifest."""
    book, ks = as_book(reviews), manifest.ks
    rows = [apply_reviews(r, book, ks, judge=run_judge(manifest)) for r in read_rows(run_dir)]
    rows, standing = judged_passed(rows, manifest)  # --judged-passed recorded in the run: once the judge earns it
    write_rows(run_dir, rows)
    old = read_summary(run_dir)
    summary = summarize(rows, manifest.metrics, old.collection if old else manifest.collection.to_json(),
                        na_as_pass=old.na_as_pass if old else False, judged=standing)
    write_json(run_dir / SUMMARY, summary.to_json())
    return summary


def run_judge(manifest: Manifest) -> str | None:
    """The judge whose verdicts a run's judged metrics use: the reviewer `rag-eval judge` recorded in the
    manifest (None before any judging)."""
    return manifest.judge.reviewer if manifest.judge else None


def sentence_split(text: str) -> list[str]:
    """The answer cut into sentences, as claims to offer the reviewer; [] for an empty answer."""
    return split_sentences(normalize(text))


def withheld(row: Row) -> bool:
    """Whether a user was shown something other than the system's answer: the bundled chatbot's fixed message in
    place of an answer without a valid citation, an abstaining system's empty screen. An `answered` row was shown
    its answer; any other row was if what it showed is the answer itself."""
    return row.answer.status != "answered" and normalize(row.answer.text) != normalize(row.answer.model_answer)


def offered_claims(row: Row) -> list[str]:
    """The claims offered to a reviewer, in the terminal or the CSV, and to a judge: the sentences of the answer
    a user was shown; none when it was withheld (a sentence no one read claims nothing to the user; a reviewer
    may still type claims)."""
    return [] if withheld(row) else sentence_split(row.answer.model_answer)
