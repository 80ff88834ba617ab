"""Measuring a judge: which claims the judged metrics count, and how far the judge agrees with people.

This room sits low, beside the metrics, so that summaries, comparisons, review, the judge and sweeps all import
down to it; it knows rows and the statistics of agreement, nothing of files or terminals.

**Judged claims.** `claims_supported` and `claim_support` count people only. Their judged siblings
(`claims_supported_judged`, `claim_support_judged`) read a row's `judged_claims`, built by `judged_claims` from the
people's claim states and one judge's review of the answer:

- when people reviewed the whole answer (every claim settled), their claims are the claims; the judge's verdict
  rides along on each claim it also rated (claims matched by `claim_key`), for the agreement between the two;
- otherwise the judge's claims are the claims, each taking the human verdict where a person settled that claim.

With no review by that judge the row has no judged claims, and the judged metrics fall back to the human ones.

**Agreement.** A claim counts as shared when a person's verdict on it is settled (one reviewer, agreed or
resolved) and the judge rated it too. Over the shared claims: percent agreement and Cohen's kappa, human verdict
against judge verdict, with seeded bootstrap intervals (`harness/stats/agreement.py`), and the confusion table
judge x human. The judge's `unverified` is a category of its own, so it never agrees with a person's `supported`.
Below `MIN_SHARED` shared claims the judge is not measured: its verdicts fill no `passed`, and every view says how
many more claims to review. Whether the shared claims were a random calibration sample (`rag-eval review
--calibrate`) or the reviewers' own choice is counted when the sample is known.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chatbot.text import normalize

from . import metrics as m
from .records import JUDGE_VERDICTS, VERDICTS, JudgedClaim, JudgeSummary, JudgeVerdict, Row, Verdict
from .stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, NO_VARIATION, Agreement, measure_agreement

__all__ = ["HUMAN", "MIN_SHARED", "NO_JUDGE", "JudgeAgreement", "SampleKey", "Shared", "claim_key",
           "judge_agreement", "judge_measured", "judge_note", "judged_claims", "judged_passed", "not_measured_text",
           "shared_claims"]

MIN_SHARED = 30  # shared claims before a judge counts as measured
HUMAN = "human"  # the people's settled verdict, as one rater against the judge
SampleKey = tuple[str, str]  # (case_id, answer_sha256): an answer of the calibration sample

NO_JUDGE = "no judge rated these answers (rag-eval judge RUN): the judged metrics equal the human ones"


def claim_key(text: str) -> str:
    """How claims are matched across reviewers (and between people and a judge): normalised text, case folded."""
    return normalize(text).casefold()


class HumanClaim(Protocol):
    """A claim as people settled it (a review's claim state): its text and the verdict that counts, if any."""

    @property
    def claim(self) -> str: ...

    @property
    def verdict(self) -> Verdict | None: ...


class JudgeClaim(Protocol):
    """One claim of a judge's review: its verdict, and the passage and quote that decide it."""

    @property
    def claim(self) -> str: ...

    @property
    def verdict(self) -> JudgeVerdict: ...

    @property
    def source_id(self) -> str | None: ...

    @property
    def quote(self) -> str | None: ...

    @property
    def note(self) -> str: ...


def judged_claims(states: Sequence[HumanClaim] | None, judge: str | None,
                  judge_claims: Sequence[JudgeClaim] = ()) -> tuple[JudgedClaim, ...] | None:
    """The judged claims of one answer from the people's claim states (None: no person reviewed it) and the
    claims of one judge's review (`judge` None: that judge did not judge it); None when not judged."""
    if judge is None:
        return None
    by_judge = {claim_key(c.claim): c for c in judge_claims}
    humans = {claim_key(s.claim): s for s in states or ()}
    if states is not None and all(s.verdict is not None for s in states):
        return tuple(_human(s, by_judge.get(claim_key(s.claim)), judge) for s in states)
    return tuple(_judged(c, humans.get(claim_key(c.claim)), judge) for c in judge_claims)


def _human(state: HumanClaim, judged: JudgeClaim | None, judge: str) -> JudgedClaim:
    return JudgedClaim(claim=state.claim, verdict=state.verdict, by="human", judge=judge,
                       judge_verdict=judged.verdict if judged else None,
                       source_id=judged.source_id if judged else None, quote=judged.quote if judged else None,
                       reason=(judged.note or None) if judged else None)


def _judged(claim: JudgeClaim, human: HumanClaim | None, judge: str) -> JudgedClaim:
    settled = human is not None and human.verdict is not None
    return JudgedClaim(claim=claim.claim, verdict=human.verdict if human is not None and settled else claim.verdict,
                       by="human" if settled else "judge", judge=judge, judge_verdict=claim.verdict,
                       source_id=claim.source_id, quote=claim.quote, reason=claim.note or None)


def judge_note(block: Mapping[str, Any] | JudgeSummary | None) -> str:
    """The line shown beside judged metrics, from a summary's `judge` (its record, or as JSON; None: no judge)."""
    if isinstance(block, JudgeSummary):
        return block.text
    return NO_JUDGE if not block else str(block.get("text", NO_JUDGE))


def not_measured_text(shared: int) -> str:
    return f"judge not measured yet: review {MIN_SHARED - shared} more claims"


@dataclass(frozen=True)
class Shared:
    """One claim both a person and the judge rated."""

    case_id: str
    answer_sha256: str
    question: str
    claim: JudgedClaim

    @property
    def sample_key(self) -> SampleKey:
        return (self.case_id, self.answer_sha256)

    def to_json(self) -> dict[str, Any]:
        c = self.claim
        return {"case_id": self.case_id, "answer_sha256": self.answer_sha256, "question": self.question,
                "claim": c.claim, "human": c.verdict, "judge": c.judge_verdict, "source_id": c.source_id,
                "quote": c.quote, "reason": c.reason}


@dataclass(frozen=True)
class JudgeAgreement:
    """A judge against people over the claims both rated."""

    judge: str
    agreement: Agreement
    shared: tuple[Shared, ...]
    random_sample: int | None = None  # shared claims from the calibration sample; None: no sample drawn

    @property
    def n(self) -> int:
        return len(self.shared)

    @property
    def measured(self) -> bool:
        return self.n >= MIN_SHARED

    @property
    def disagreements(self) -> tuple[Shared, ...]:
        return tuple(s for s in self.shared if s.claim.verdict != s.claim.judge_verdict)

    def confusion(self) -> dict[str, dict[str, int]]:
        """judge verdict -> human verdict -> claims."""
        table: dict[str, dict[str, int]] = {j: dict.fromkeys(VERDICTS, 0) for j in JUDGE_VERDICTS}
        for s in self.shared:
            table[str(s.claim.judge_verdict)][str(s.claim.verdict)] += 1
        return table

    def sample_text(self) -> str:
        """Whether the shared claims were a random sample or the reviewers' own choice."""
        if self.random_sample is None:
            return "the reviewers' own choice (no calibration sample drawn: rag-eval review RUN --calibrate N)"
        chosen = self.n - self.random_sample
        if not chosen:
            return f"a random calibration sample ({self.random_sample} claims)"
        return (f"{self.random_sample} from the random calibration sample, {chosen} the reviewers' own choice "
                "(may be biased)")

    def headline(self) -> str:
        """One line for summaries, compare, report and leaderboards: kappa, interval, n shared; or how many more
        claims to review."""
        if not self.measured:
            return f"{not_measured_text(self.n)} ({self.n} shared with people)"
        a, ci = self.agreement, self.agreement.interval
        kappa = "undefined" if a.value is None else f"{a.value:.3f} {ci.text()}"
        return f"judge {self.judge}: kappa {kappa} vs people over {self.n} shared claims"

    def summary_json(self) -> dict[str, Any]:
        a, ci = self.agreement, self.agreement.interval
        return {"reviewer": self.judge, "shared_claims": self.n, "measured": self.measured, "kappa": a.value,
                "interval": [ci.low, ci.high], "interval_note": NO_VARIATION if ci.no_variation else None,
                "percent_agreement": a.percent_agreement, "text": self.headline()}

    def to_json(self) -> dict[str, Any]:
        a = self.agreement
        return {"reviewer": self.judge, "reviewers": list(a.reviewers), "claims": self.n, "measured": self.measured,
                "percent_agreement": a.percent_agreement,
                "percent_agreement_interval": a.percent_interval.to_dict(), "kappa": a.value,
                "interval": a.interval.to_dict(), "undefined_reason": a.reason, "confusion": self.confusion(),
                "random_sample": self.random_sample, "sample": self.sample_text(), "text": self.headline(),
                "disagreements": [d.to_json() for d in self.disagreements]}


def shared_claims(rows: Sequence[Row]) -> list[Shared]:
    """The claims of `rows` (reviews applied) that a person settled and the judge rated, each answer once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for r in rows:  # each answer once: repeats with the same answer share its reviews
        if r.errored or (r.case_id, r.answer.answer_sha256) in seen:
            continue
        seen.add((r.case_id, r.answer.answer_sha256))
        out += [Shared(r.case_id, r.answer.answer_sha256, r.question, c) for c in r.judged_claims or ()
                if c.by == "human" and c.judge_verdict is not None]
    return out


def judge_agreement(rows: Sequence[Row], *, sample: Collection[SampleKey] | None = None, seed: int = DEFAULT_SEED,
                    resamples: int = DEFAULT_RESAMPLES) -> JudgeAgreement | None:
    """The judge of `rows` against people; None when no row carries judged claims. `sample` holds the answers of
    the calibration sample, to count how many shared claims came from it."""
    judges = sorted({c.judge for r in rows for c in r.judged_claims or ()})
    if not judges:
        return None
    shared = shared_claims(rows)
    items = [{HUMAN: str(s.claim.verdict), s.claim.judge: str(s.claim.judge_verdict)} for s in shared]
    result = measure_agreement(items, seed=seed, resamples=resamples)
    random_sample = None if sample is None else sum(s.sample_key in sample for s in shared)
    return JudgeAgreement(judges[0], result, tuple(shared), random_sample)


def judge_measured(rows: Sequence[Row]) -> bool:
    """A judge rated the answers and shares at least `MIN_SHARED` claims with people."""
    judge = judge_agreement(rows, resamples=1)
    return judge is not None and judge.measured


def judged_passed(rows: Sequence[Row]) -> list[Row]:
    """`--judged-passed`: each row's `passed` from claim_support_judged instead of claim_support, once the judge
    is measured against people (`MIN_SHARED` shared claims); before that, the rows as they are."""
    if not judge_measured(rows):
        return list(rows)
    return [r if r.errored else r.model_copy(update={"metrics": r.metrics | {"passed": m.passed_of(r.metrics,
                                                                                                 judged=True)}})
            for r in rows]
