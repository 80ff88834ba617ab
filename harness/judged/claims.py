"""The judged claims: which claims the judged metrics count, from people's claims and one judge's review.

`claims_supported` and `claim_support` count people only. Their judged siblings (`claims_supported_judged`,
`claim_support_judged`) read a row's `judged_claims`, built by `judged_claims` from the people's claim states and
one judge's review of the answer:

- when people reviewed the whole answer (every claim settled), their claims are the claims; the judge's verdict
  rides along on each claim it also rated (claims matched by `claim_key`), for the agreement between the two;
- otherwise the judge's claims are the claims, each taking the human verdict where a person settled that claim.

With no review by that judge the row has no judged claims, and the judged metrics fall back to the human ones.
How far the judge agrees with people, and whether its verdicts may fill in `passed`, is
`harness.judged.standing`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pdfrag.text import normalize

from ..records import JudgedClaim, JudgeVerdict, Verdict

__all__ = ["claim_key", "judged_claims"]


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
