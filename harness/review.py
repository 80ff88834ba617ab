"""Human claim review, kept in a file beside the cases: `<cases stem>.reviews.jsonl`.

A review belongs to one case and one answer: it is keyed by (case_id, answer_sha256), the hash of the
normalised answer text. A later run whose answer is unchanged is therefore reviewed already; a changed answer
is pending again. Pending never counts as a pass: its `claims_supported` is null.

`claims_supported` of a reviewed answer = supported claims / all claims (unsupported and contradicted claims
count against it); an answer reviewed as making no claims (an abstention, say) is reviewed with a null value.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection, Iterable, Mapping, Sequence

from chatbot.errors import InputError
from chatbot.store import atomic_write_text
from chatbot.text import normalize, split_sentences

from .cases import Problems, json_lines
from .records import ClaimRecord, Row, Summary
from .rows import with_review
from .runs import SUMMARY, read_json, read_manifest, read_rows, summarize, write_json, write_rows

__all__ = ["VERDICTS", "Claim", "Review", "ReviewKey", "reviews_path", "load_reviews", "read_reviews",
           "save_reviews", "apply_reviews", "apply_to_run", "sentence_split", "export_csv", "import_csv",
           "passages_by_answer", "CSV_COLUMNS", "NO_CLAIMS"]

VERDICTS = ("supported", "unsupported", "contradicted")
NO_CLAIMS = "none"  # CSV verdict, on a single line with an empty claim: the answer makes no claims
CSV_COLUMNS = ("case_id", "answer_sha256", "question", "answer", "claim", "verdict", "source_id", "note")
ReviewKey = tuple[str, str]  # (case_id, answer_sha256)
_SHA = re.compile(r"^[0-9a-f]{64}$")
# A sentence ends at . ! or ? followed by space and a capital, digit or opening quote/bracket, so that
# "EUR 0.30" and "e.g. the" stay whole.


@dataclass(frozen=True)
class Claim:
    """One claim of an answer and the reviewer's verdict; `source_id` names the supporting passage."""

    claim: str
    verdict: str  # supported | unsupported | contradicted
    source_id: str | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return {"claim": self.claim, "verdict": self.verdict, "source_id": self.source_id, "note": self.note}

    @classmethod
    def from_dict(cls, data: dict) -> "Claim":
        return cls(data["claim"], data["verdict"], data.get("source_id"), data.get("note", ""))


@dataclass(frozen=True)
class Review:
    """A reviewer's verdicts on every claim of one answer. `reviewed_at` is UTC ISO 8601."""

    case_id: str
    answer_sha256: str
    claims: tuple[Claim, ...]
    reviewer: str
    reviewed_at: str

    @property
    def key(self) -> ReviewKey:
        return (self.case_id, self.answer_sha256)

    @property
    def claims_supported(self) -> float | None:
        """Supported claims / all claims; None when the answer makes no claims."""
        if not self.claims:
            return None
        return sum(c.verdict == "supported" for c in self.claims) / len(self.claims)

    def to_dict(self) -> dict:
        return {"case_id": self.case_id, "answer_sha256": self.answer_sha256,
                "claims": [c.to_dict() for c in self.claims], "reviewer": self.reviewer,
                "reviewed_at": self.reviewed_at}

    @classmethod
    def from_dict(cls, data: dict) -> "Review":
        return cls(data["case_id"], data["answer_sha256"], tuple(Claim.from_dict(c) for c in data["claims"]),
                   data.get("reviewer", ""), data.get("reviewed_at", ""))


def reviews_path(cases_path: str | Path) -> Path:
    """`sample_docs/cases.jsonl` -> `sample_docs/cases.reviews.jsonl`."""
    path = Path(cases_path)
    return path.with_name(f"{path.stem}.reviews.jsonl")


def load_reviews(cases_path: str | Path, *, reviews_file: str | Path | None = None) -> dict[ReviewKey, Review]:
    """The reviews beside a cases file (or in `reviews_file`); none when the file does not exist yet."""
    return read_reviews(reviews_file if reviews_file is not None else reviews_path(cases_path))


def read_reviews(path: str | Path) -> dict[ReviewKey, Review]:
    """Parse a reviews JSONL file, reporting every bad line at once. A later line for the same key wins."""
    path = Path(path)
    if not path.exists():
        return {}
    problems, reviews = Problems(str(path)), {}
    for number, data in json_lines(path.read_text(encoding="utf-8").splitlines(), problems):
        found = list(_review_problems(data))
        for message in found:
            problems.add(number, message)
        if not found:
            review = Review.from_dict(data)
            reviews[review.key] = review
    problems.raise_if_any("the reviews file")
    return reviews


def _review_problems(data: object) -> Iterable[str]:
    if not isinstance(data, dict):
        yield "review: expected a JSON object"
        return
    if not isinstance(data.get("case_id"), str) or not data.get("case_id"):
        yield "case_id: missing or not a string"
    if not isinstance(data.get("answer_sha256"), str) or not _SHA.match(data["answer_sha256"]):
        yield "answer_sha256: expected 64 lowercase hex digits"
    claims = data.get("claims")
    if not isinstance(claims, list):
        yield "claims: expected a list"
        return
    for i, claim in enumerate(claims):
        if not isinstance(claim, dict) or not isinstance(claim.get("claim"), str):
            yield f"claims/{i}/claim: missing or not a string"
        elif claim.get("verdict") not in VERDICTS:
            yield f"claims/{i}/verdict: {claim.get('verdict')!r} is not one of {', '.join(VERDICTS)}"


def save_reviews(path: str | Path, reviews: Mapping[ReviewKey, Review]) -> None:
    """Rewrite the reviews file atomically, one review a line, sorted by case id then answer hash."""
    lines = [json.dumps(reviews[k].to_dict(), ensure_ascii=False) for k in sorted(reviews)]
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def apply_reviews(row: Row, reviews: Mapping[ReviewKey, Review], ks: Sequence[int]) -> Row:
    """`row` reviewed (claims, and the claim metrics from them) when a review matches its case id and answer
    hash; otherwise, and for a row with an error, `row` unchanged: it keeps the review it carries, which is about
    its own answer (e.g. the claims file of a scored run)."""
    review = reviews.get((row.case_id, row.answer.answer_sha256))
    if review is None:
        return row
    return with_review(row, [ClaimRecord.model_validate(c.to_dict()) for c in review.claims], ks)


def apply_to_run(run_dir: str | Path, reviews: Mapping[ReviewKey, Review]) -> Summary:
    """Rewrite a run's rows with `reviews` applied and its summary recomputed from them; returns the summary."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    ks = manifest.settings.get("k") or [int(n.split("@")[1]) for n in manifest.metrics if n.startswith("hit@")]
    rows = [apply_reviews(r, reviews, ks) for r in read_rows(run_dir)]
    write_rows(run_dir, rows)
    old = read_json(run_dir / SUMMARY) if (run_dir / SUMMARY).exists() else {}
    summary = summarize(rows, manifest.metrics, old.get("collection", manifest.collection),
                        na_as_pass=old.get("na_as_pass", False))
    write_json(run_dir / SUMMARY, summary.to_json())
    return summary


def sentence_split(text: str) -> list[str]:
    """The answer cut into sentences, as claims to offer the reviewer; [] for an empty answer."""
    text = normalize(text)
    return split_sentences(text)


def export_csv(rows: Sequence[Row], reviews: Mapping[ReviewKey, Review]) -> str:
    """CSV text with one line per claim (columns CSV_COLUMNS). Reviewed answers carry their verdicts; pending
    ones get the offered sentence split with blank verdicts; an answer without claims gets one line with an
    empty claim (verdict `none` once reviewed). Rows with an error are left out."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        if row.errored:
            continue
        sha, answer = row.answer.answer_sha256, row.answer.model_answer
        base = [row.case_id, sha, row.question, answer]
        review = reviews.get((row.case_id, sha))
        if review is not None:
            for c in review.claims:
                writer.writerow(base + [c.claim, c.verdict, c.source_id or "", c.note])
            if not review.claims:
                writer.writerow(base + ["", NO_CLAIMS, "", ""])
        else:
            for sentence in sentence_split(answer) or [""]:
                writer.writerow(base + [sentence, "", "", ""])
    return out.getvalue()


@dataclass
class _Group:
    line: int
    claims: list[tuple[int, dict]] = field(default_factory=list)


def import_csv(path: str | Path, *, reviewer: str, reviewed_at: str,
               known: Mapping[ReviewKey, Collection[str]] | None = None) -> dict[ReviewKey, Review]:
    """Reviews from a CSV in the export layout. Lines are grouped by (case_id, answer_sha256); a group whose
    verdicts are all blank is still pending and skipped; otherwise every line needs a verdict, and `supported`
    needs a source_id. `known`, when given, maps each answer key of the run to the source ids of its passages;
lines for other answers, or citing other passages, are problems. Every problem is reported
    at once as file:line: field: message."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    problems = Problems(str(path))
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("case_id", "answer_sha256", "claim", "verdict", "source_id", "note")
               if c not in (reader.fieldnames or [])]
    if missing:
        problems.add(1, f"header: missing column(s) {', '.join(missing)}; expected {','.join(CSV_COLUMNS)}")
        problems.raise_if_any("the review CSV")
    groups: dict[ReviewKey, _Group] = {}
    start = 2
    for record in reader:
        line, start = start, reader.line_num + 1
        key = ((record["case_id"] or "").strip(), (record["answer_sha256"] or "").strip())
        if _line_ok(record, key, line, problems, known):
            groups.setdefault(key, _Group(line)).claims.append((line, record))
    reviews = {k: r for k, g in groups.items() if (r := _group_review(k, g, problems, reviewer, reviewed_at))}
    problems.raise_if_any("the review CSV")
    return reviews


def _line_ok(record: dict, key: ReviewKey, line: int, problems: Problems,
             known: Mapping[ReviewKey, Collection[str]] | None) -> bool:
    before = len(problems.items)
    if not key[0]:
        problems.add(line, "case_id: empty")
    if not _SHA.match(key[1]):
        problems.add(line, "answer_sha256: expected 64 lowercase hex digits, as exported")
    elif known is not None and key[0] and key not in known:
        problems.add(line, f"answer_sha256: no row of this run has this answer for case {key[0]!r}; "
                           "export again from the run you are reviewing")
    verdict = (record["verdict"] or "").strip().lower()
    if verdict and verdict not in (*VERDICTS, NO_CLAIMS):
        problems.add(line, f"verdict: {record['verdict']!r} is not one of {', '.join(VERDICTS)}, {NO_CLAIMS} "
                           "or blank")
    elif verdict == "supported" and not (record["source_id"] or "").strip():
        problems.add(line, "source_id: a supported claim needs the id of the passage that supports it")
    elif (source := (record["source_id"] or "").strip()) and known is not None and key in known \
            and source not in known[key]:
        problems.add(line, f"source_id: {source!r} is not among the passages retrieved for this answer "
                           f"({', '.join(sorted(known[key])) or 'none'})")
    elif verdict in VERDICTS and not (record["claim"] or "").strip():
        problems.add(line, "claim: empty; write the claim, or use verdict none for an answer without claims")
    return len(problems.items) == before


def _group_review(key: ReviewKey, group: _Group, problems: Problems, reviewer: str,
                  reviewed_at: str) -> Review | None:
    verdicts = [(line, (r["verdict"] or "").strip().lower()) for line, r in group.claims]
    if all(not v for _, v in verdicts):
        return None
    if any(v == NO_CLAIMS for _, v in verdicts):
        if len(verdicts) > 1:
            problems.add(group.line, f"verdict: {NO_CLAIMS} must be the only line of case {key[0]!r}'s answer")
            return None
        return Review(key[0], key[1], (), reviewer, reviewed_at)
    blank = [line for line, v in verdicts if not v]
    for line in blank:
        problems.add(line, f"verdict: blank while other claims of case {key[0]!r} have one; give every claim "
                           "of this answer a verdict, or none of them")
    if blank:
        return None
    claims = tuple(Claim(r["claim"].strip(), (r["verdict"] or "").strip().lower(),
                         (r["source_id"] or "").strip() or None, (r["note"] or "").strip())
                   for _, r in group.claims)
    return Review(key[0], key[1], claims, reviewer, reviewed_at)


def passages_by_answer(rows: Sequence[Row]) -> dict[ReviewKey, set[str]]:
    """Each answer key of a run's rows (errors left out) with the source ids a claim may cite."""
    out: dict[ReviewKey, set[str]] = {}
    for row in rows:
        if not row.errored:
            key = (row.case_id, row.answer.answer_sha256)
            out.setdefault(key, set()).update(p.source_id for p in row.retrieved)
    return out
