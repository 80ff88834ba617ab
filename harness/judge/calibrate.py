"""`rag-eval review RUN --calibrate N`: a seeded random sample of N judged claims for people to review first, so
the judge's measured agreement is not biased by which claims a reviewer happened to pick.

The N claims are drawn without replacement from every claim the judge rated, stratified by the judge's verdict
(each verdict gets its proportional share, largest remainders first, at least one while N allows), with
`random.Random(seed)` over the claims in a fixed order. People review whole answers, so the sample is the set of
answers holding a drawn claim; every shared claim of those answers counts as from the random sample, any other
shared claim as the reviewers' own choice. The sample is written beside the reviews file
(`<reviews stem>.calibration.json`) and reused while the judge, N and seed are unchanged (`calibration_sample`).
`run_agreement` measures a run's reviewers and its judge against people, counting the claims from the sample
(`rag-eval review RUN --agreement`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdfrag.safe_files import atomic_write_text

from ..errors import InputError, command
from ..judged.claims import claim_key
from ..judged.standing import JudgeAgreement, judge_agreement
from ..records import Manifest, Row
from ..review.agreement import Disagreement, agreement_report
from ..review.book import ReviewKey
from ..review.store import ReviewBook, apply_reviews, run_judge
from ..runs import read_manifest
from ..stats.agreement import AgreementReport

__all__ = ["CalibrationSample", "calibration_sample", "draw_sample", "read_sample", "run_agreement", "sample_path",
           "write_sample"]


@dataclass(frozen=True)
class CalibrationSample:
    """The drawn claims (case_id, answer_sha256, claim text) of one judge's verdicts."""

    judge: str
    n: int
    seed: int
    claims: tuple[tuple[str, str, str], ...]

    def answers(self) -> set[ReviewKey]:
        return {(case_id, sha) for case_id, sha, _ in self.claims}

    def to_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "n": self.n, "seed": self.seed,
                "claims": [{"case_id": c, "answer_sha256": s, "claim": t} for c, s, t in self.claims]}


def sample_path(reviews: str | Path) -> Path:
    path = Path(reviews)
    return path.with_name(f"{path.stem}.calibration.json")


def read_sample(reviews: str | Path) -> CalibrationSample | None:
    """The calibration sample beside the reviews file, or None when none was drawn."""
    path = sample_path(reviews)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return CalibrationSample(data["judge"], int(data["n"]), int(data["seed"]),
                                 tuple((c["case_id"], c["answer_sha256"], c["claim"]) for c in data["claims"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a calibration sample ({exc}); delete it and draw again with --calibrate N") \
            from None


def write_sample(reviews: str | Path, sample: CalibrationSample) -> Path:
    path = sample_path(reviews)
    atomic_write_text(path, json.dumps(sample.to_json(), indent=1, ensure_ascii=False) + "\n")
    return path


def _allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional shares of n over the strata, largest remainders first, at least one each while n allows."""
    total = sum(sizes.values())
    exact = {k: n * v / total for k, v in sizes.items()}
    share = {k: min(sizes[k], max(1 if n >= len(sizes) else 0, int(exact[k]))) for k in sizes}
    for k in sorted(sizes, key=lambda k: (-(exact[k] - int(exact[k])), k)):
        if sum(share.values()) >= n:
            break
        if share[k] < sizes[k]:
            share[k] += 1
    while sum(share.values()) > n:  # the minimum of one each overshot: take from the largest
        biggest = max(share, key=lambda k: (share[k], k))
        share[biggest] -= 1
    return share


def draw_sample(rows: Sequence[Row], judge: str, n: int, seed: int) -> CalibrationSample:
    """N judged claims of `rows` (reviews applied with `judge`), stratified by the judge's verdict."""
    if n < 1:
        raise InputError(f"--calibrate needs a positive number of claims, got {n}")
    strata: dict[str, list[tuple[str, str, str]]] = {}
    seen: set[tuple[str, str, str]] = set()
    for row in rows:
        for c in row.judged_claims or ():
            key = (row.case_id, row.answer.answer_sha256, claim_key(c.claim))
            if c.judge == judge and c.judge_verdict is not None and key not in seen:
                seen.add(key)
                strata.setdefault(c.judge_verdict, []).append((row.case_id, row.answer.answer_sha256, c.claim))
    if not strata:
        raise InputError(f"no claims judged by {judge}; run `rag-eval judge RUN` first")
    rng, drawn = random.Random(seed), []
    for verdict, count in sorted(_allocate({k: len(v) for k, v in strata.items()}, min(n, len(seen))).items()):
        drawn += rng.sample(sorted(strata[verdict]), count)
    return CalibrationSample(judge, n, seed, tuple(drawn))


def calibration_sample(run_dir: str | Path, rows: Sequence[Row], book: ReviewBook, reviews: str | Path, n: int,
                       seed: int) -> CalibrationSample:
    """The calibration sample of this run's judge: the one beside the reviews file if drawn with the same judge,
    N and seed, else a new one (written there)."""
    manifest = read_manifest(run_dir)
    judge = _judge_of(manifest, book)
    if judge is None:
        raise InputError(f"no judge has rated {run_dir}'s answers; run `{command('judge', run_dir)}` first")
    old = read_sample(reviews)
    if old is not None and (old.judge, old.n, old.seed) == (judge, n, seed):
        return old
    applied = [apply_reviews(r, book, manifest.ks, judge=judge) for r in rows]
    sample = draw_sample(applied, judge, n, seed)
    write_sample(reviews, sample)
    return sample


def run_agreement(run_dir: str | Path, rows: Sequence[Row], book: ReviewBook, reviews: str | Path, *, seed: int,
                  resamples: int) -> tuple[AgreementReport[Disagreement], JudgeAgreement | None]:
    """The reviews of `book` applied to the run's `rows`: agreement between people, and (None when no judge rated
    the answers) the judge against people, counting the shared claims of the calibration sample beside `reviews`."""
    manifest = read_manifest(run_dir)
    judge = _judge_of(manifest, book)
    applied = [apply_reviews(r, book, manifest.ks, judge=judge) for r in rows]
    report = agreement_report(applied, seed=seed, resamples=resamples)
    sample = read_sample(reviews)
    judged = judge_agreement(applied, sample=None if sample is None else sample.answers(), seed=seed,
                             resamples=resamples)
    return report, judged


def _judge_of(manifest: Manifest, book: ReviewBook) -> str | None:
    """The run's judge: the one `rag-eval judge` recorded in its manifest, else the first (by name) in the reviews."""
    return run_judge(manifest) or next(iter(book.judges()), None)
