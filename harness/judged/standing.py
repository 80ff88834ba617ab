"""The judge's standing: how far it agrees with people over the claims both rated, and whether it has earned its
say over `passed` (the floor). Which claims the judged metrics count is `harness.judged.claims`.

This room sits low, beside the metrics, so that summaries, comparisons, review, the judge and sweeps all import
down to it; it knows rows and the statistics of agreement, nothing of files or terminals.

**Agreement.** A claim counts as shared when a person's verdict on it is settled (one reviewer, agreed or
resolved) and the judge rated it too. Over the shared claims: percent agreement and Cohen's kappa, human verdict
against judge verdict, with seeded bootstrap intervals (`harness/stats/agreement.py`), and the confusion table
judge x human, and per verdict the judge's precision (how often its "supported" is a person's "supported") and
recall (how many of the people's it finds) with Wilson intervals. The judge's `unverified` is a category of its
own, so it never agrees with a person's `supported`. Below `MIN_SHARED` shared claims the judge is not measured,
and every view says how many more claims to review. Whether the shared claims were a random calibration sample
(`rag-eval review --calibrate`) or the reviewers' own choice is counted when the sample is known.

**Earning its say.** `--judged-passed` lets the judge's verdicts fill in `passed` only when the judge clears the
floor of `harness/stats/judge_floor.py`, decided without resampling: at least `MIN_SHARED` shared claims, people
gave "supported" and "unsupported" (or "contradicted") each on at least `MIN_PER_VERDICT` of them, the lower end of
kappa's analytic 95 % interval is at least `--min-judge-kappa` (default 0.6, `harness/stats/defaults.py`), and the
Wilson lower bound of the judge's recall of each verdict is at least `MIN_RECALL`; and, where runs are compared
(compare, sweep), every run is judged by the same judge: reviewer name and prompt digest (`JudgeStanding`,
`judge_refusal`). A run that asked for it and whose judge does not clear keeps the people's `passed` and says so
(summary.json `judged_passed`); compare and sweep refuse (exit 6), naming each missing verdict and how many more
claims of it to review. The agreement shown in summaries (`JudgeAgreement`) keeps its seeded bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import metrics as m
from ..errors import JudgeRefused
from ..records import JUDGE_VERDICTS, VERDICTS, AnyRow, JudgedClaim, JudgeSummary, Manifest, Row
from ..stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, NO_VARIATION, Agreement, measure_agreement
from ..stats.defaults import DEFAULT_MIN_JUDGE_KAPPA
from ..stats.judge_floor import (
    FLOOR_VERDICTS,
    MIN_PER_VERDICT,
    MIN_RECALL,
    MIN_SHARED,
    FloorCheck,
    VerdictCheck,
    floor_check,
)
from ..stats.precision_recall import CategoryScore, per_category

__all__ = ["FLOOR_VERDICTS", "HUMAN", "MIN_PER_VERDICT", "MIN_RECALL", "MIN_SHARED", "NO_JUDGE", "JudgeAgreement",
           "JudgeStanding", "SampleKey", "Shared", "VerdictCheck",
           "judge_agreement", "judge_note", "judge_prompt_sha256", "judge_refusal", "judge_standing",
           "judged_passed", "judges_differ", "not_measured_text", "passed_from", "shared_claims"]

HUMAN = "human"  # the people's settled verdict, as one rater against the judge
SampleKey = tuple[str, str]  # (case_id, answer_sha256): an answer of the calibration sample

NO_JUDGE = "no judge rated these answers (rag-eval judge RUN): the judged metrics equal the human ones"


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

    def per_verdict(self) -> tuple[CategoryScore, ...]:
        """Per human verdict: how often the judge's verdict is the people's (precision) and how many of the
        people's the judge finds (recall), with 95 % Wilson intervals (`harness/stats/precision_recall.py`)."""
        return per_category([str(s.claim.verdict) for s in self.shared],
                            [str(s.claim.judge_verdict) for s in self.shared], VERDICTS)

    def floor(self, floor: float = DEFAULT_MIN_JUDGE_KAPPA) -> FloorCheck:
        """The `--judged-passed` floor over these shared claims (`harness.stats.judge_floor.floor_check`)."""
        return _floor_over(self.shared, floor)

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
                "per_verdict": [v.to_json() for v in self.per_verdict()],
                "random_sample": self.random_sample, "sample": self.sample_text(), "text": self.headline(),
                "disagreements": [d.to_json() for d in self.disagreements]}


def shared_claims(rows: Sequence[AnyRow]) -> list[Shared]:
    """The claims of `rows` (reviews applied) that a person settled and the judge rated, each answer once."""
    seen: set[tuple[str, str]] = set()
    out = []
    for r in rows:  # each answer once: repeats with the same answer share its reviews
        if r.error is not None or (r.case_id, r.answer.answer_sha256) in seen:
            continue
        seen.add((r.case_id, r.answer.answer_sha256))
        out += [Shared(r.case_id, r.answer.answer_sha256, r.question, c) for c in r.judged_claims or ()
                if c.by == "human" and c.judge_verdict is not None]
    return out


def judge_agreement(rows: Sequence[AnyRow], *, sample: Collection[SampleKey] | None = None, seed: int = DEFAULT_SEED,
                    resamples: int = DEFAULT_RESAMPLES) -> JudgeAgreement | None:
    """The judge of `rows` against people; None when no row carries judged claims. `sample` holds the answers of
    the calibration sample, to count how many shared claims came from it."""
    judge = _judge_of(rows)
    if judge is None:
        return None
    shared = shared_claims(rows)
    items = [{HUMAN: str(s.claim.verdict), s.claim.judge: str(s.claim.judge_verdict)} for s in shared]
    result = measure_agreement(items, seed=seed, resamples=resamples)
    random_sample = None if sample is None else sum(s.sample_key in sample for s in shared)
    return JudgeAgreement(judge, result, tuple(shared), random_sample)


def _judge_of(rows: Sequence[AnyRow]) -> str | None:
    """The judge whose verdicts `rows` carry (the first by name), or None."""
    return min((c.judge for r in rows for c in r.judged_claims or ()), default=None)


def _floor_over(shared: Sequence[Shared], floor: float) -> FloorCheck:
    return floor_check([str(s.claim.verdict) for s in shared], [str(s.claim.judge_verdict) for s in shared],
                       floor=floor)


@dataclass(frozen=True)
class JudgeStanding:
    """Whether a run's judge has earned its say over `passed` (`--judged-passed`), decided without resampling: at
    least `MIN_SHARED` claims shared with people, people gave each verdict of `FLOOR_VERDICTS` on at least
    `MIN_PER_VERDICT` of them, the lower end of kappa's analytic 95 % interval (`harness/stats/kappa_interval.py`)
    is at least the floor, and the Wilson lower bound of the judge's recall of each verdict is at least
    `MIN_RECALL` (the part that cannot collapse: the analytic interval has width 0 at perfect agreement).
    `refusal` says every reason why not, naming the verdict and what to review; None when it clears. `judge` is
    None when no judge rated the answers."""

    judge: str | None
    prompt_sha256: str | None
    shared: int
    kappa: float | None
    low: float | None
    high: float | None
    floor: float
    refusal: str | None = None
    verdicts: tuple[VerdictCheck, ...] = ()

    @property
    def clears(self) -> bool:
        return self.refusal is None

    def text(self) -> str:
        """`judge J (prompt abcdef012345): kappa 0.800 [0.648, 0.952] over 60 shared claims; recall supported
        27/30 (>= 0.744), unsupported 27/30 (>= 0.744)`."""
        if self.judge is None:
            return NO_JUDGE.split(" (")[0]
        prompt = f" (prompt {self.prompt_sha256[:12]})" if self.prompt_sha256 else ""
        interval = ", interval undefined (one verdict throughout)," if self.low is None or self.high is None \
            else f" [{self.low:.3f}, {self.high:.3f}]"
        kappa = "undefined" if self.kappa is None else f"{self.kappa:.3f}{interval}"
        recall = "; recall " + ", ".join(v.text() for v in self.verdicts) if self.verdicts else ""
        return f"judge {self.judge}{prompt}: kappa {kappa} over {self.shared} shared claims{recall}"

    def to_json(self) -> dict[str, Any]:
        return {"applied": self.clears, "judge": self.judge, "prompt_sha256": self.prompt_sha256,
                "shared_claims": self.shared, "kappa": self.kappa, "interval": [self.low, self.high],
                "interval_note": None, "min_kappa": self.floor, "min_shared": MIN_SHARED, "refusal": self.refusal,
                "text": self.text()}


def judge_prompt_sha256(manifest: Manifest) -> str | None:
    """The SHA-256 of the prompt the run's judge was asked with, as its manifest records it (`judge` section)."""
    return manifest.judge.prompt_sha256 if manifest.judge else None


def judge_standing(rows: Sequence[Row], *, floor: float, prompt_sha256: str | None = None) -> JudgeStanding:
    """The judge of `rows` against the floor (`JudgeStanding`, `harness.stats.judge_floor.floor_check`):
    deterministic, the same rows give the same decision."""
    judge = _judge_of(rows)  # the floor reads only the shared claims: no agreement table, no bootstrap
    if judge is None:
        return JudgeStanding(None, prompt_sha256, 0, None, None, None, floor, "no judge rated these answers")
    shared = shared_claims(rows)
    check = _floor_over(shared, floor)
    return JudgeStanding(judge, prompt_sha256, len(shared), check.kappa, check.low, check.high, floor,
                         "; ".join(check.reasons) if check.reasons else None, check.verdicts)


def judges_differ(standings: Sequence[tuple[str, JudgeStanding]]) -> str | None:
    """Why runs compared with each other are not judged by one judge (reviewer name and prompt digest), or None."""
    judges = {(s.judge, s.prompt_sha256) for _, s in standings}
    if len(judges) <= 1 and all(s.prompt_sha256 for _, s in standings if s.judge is not None):
        return None
    unknown = [label for label, s in standings if s.judge is not None and not s.prompt_sha256]
    if len(judges) == 1 and unknown:
        return f"the prompt of the judge of {', '.join(unknown)} is not recorded (rag-eval judge records it)"
    return "they are not judged by one judge (name and prompt): " + "; ".join(
        f"{label} {s.judge or 'none'}" + (f" prompt {s.prompt_sha256[:12]}" if s.prompt_sha256 else "")
        for label, s in standings)


def judge_refusal(standings: Sequence[tuple[str, JudgeStanding]], *, compared: bool) -> JudgeRefused | None:
    """The refusal of `--judged-passed` over these runs (label, standing), or None when every judge clears the
    floor and, when the runs are `compared` with each other, they share one judge. The message names every run's
    judge with kappa, its interval, the shared claims, and the floor."""
    mismatch = judges_differ(standings) if compared and len(standings) > 1 else None
    if all(s.clears for _, s in standings) and mismatch is None:
        return None
    floor = standings[0][1].floor
    lines = ["--judged-passed refused: the judge has not earned its say over `passed`",
             *(f"  {label}: {s.text()}; " + (f"refused: {s.refusal}" if s.refusal else "clears the floor")
               for label, s in standings),
             *([f"  refused: {mismatch}"] if mismatch else []),
             f"a judge fills in `passed` only when it shares at least {MIN_SHARED} claims with people, people called "
             f"at least {MIN_PER_VERDICT} of them supported and {MIN_PER_VERDICT} unsupported (or contradicted), the "
             f"lower end of kappa's analytic 95% interval is at least --min-judge-kappa {floor:g}, the Wilson lower "
             f"bound of its recall of each of the two is at least {MIN_RECALL:g}, and runs compared are judged by "
             "the same judge (docs/judge.md)"]
    return JudgeRefused("\n".join(lines))


def passed_from(rows: Sequence[Row], *, judged: bool) -> list[Row]:
    """Each row's `passed` recomputed from its metrics: from claim_support_judged (`judged`, `--judged-passed`) or
    the people's claim_support. Errored rows are left as they are."""
    return [r if r.errored else r.model_copy(update={"metrics": r.metrics | {"passed": m.passed_of(r.metrics,
                                                                                                 judged=judged)}})
            for r in rows]


def judged_passed(rows: Sequence[Row], manifest: Manifest) -> tuple[list[Row], JudgeStanding | None]:
    """`passed` as the run's manifest asks: with `judged_passed` in its settings, read from claim_support_judged when
    the run's judge clears the floor it recorded (`min_judge_kappa`; runs written before it: the default), else the
    people's, with the standing that says which and why; without it, the rows as they are and None."""
    settings = manifest.settings
    if not settings.judged_passed:
        return list(rows), None
    floor = DEFAULT_MIN_JUDGE_KAPPA if settings.min_judge_kappa is None else settings.min_judge_kappa
    standing = judge_standing(rows, floor=floor, prompt_sha256=judge_prompt_sha256(manifest))
    return passed_from(rows, judged=standing.clears), standing
