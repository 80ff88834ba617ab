"""The claims as the judged metrics count them: a person's settled verdict where there is one, else the judge's.

`claims_supported` and `claim_support` count people only (`ReviewBook.claim_states`). Their judged siblings
(`claims_supported_judged`, `claim_support_judged`) read the row's `judged_claims`, built here from the same human
claim states and one judge's review of the answer:

- when people reviewed the whole answer (every claim settled), their claims are the claims; the judge's verdict
  rides along on each claim it also rated (claims matched by `claim_key`), for the agreement between the two;
- otherwise the judge's claims are the claims, each taking the human verdict where a person settled that claim.

With no review by that judge the row has no judged claims, and the judged metrics fall back to the human ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..records import JudgedClaim
from .book import Claim, ClaimState, Review, claim_key

__all__ = ["judged_claims"]


def judged_claims(states: Sequence[ClaimState] | None, judge: Review | None) -> tuple[JudgedClaim, ...] | None:
    """The judged claims of one answer from its human claim states (None: no person reviewed it) and the judge's
    review (None: not judged); None when the judge did not judge it."""
    if judge is None:
        return None
    by_judge = {claim_key(c.claim): c for c in judge.claims}
    humans = {claim_key(s.claim): s for s in states or ()}
    if states is not None and all(s.verdict is not None for s in states):
        return tuple(_human(s, by_judge.get(claim_key(s.claim)), judge.reviewer) for s in states)
    return tuple(_judged(c, humans.get(claim_key(c.claim)), judge.reviewer) for c in judge.claims)


def _human(state: ClaimState, judged: Claim | None, judge: str) -> JudgedClaim:
    return JudgedClaim(claim=state.claim, verdict=state.verdict, by="human", judge=judge,
                       judge_verdict=judged.verdict if judged else None,
                       source_id=judged.source_id if judged else None, quote=judged.quote if judged else None,
                       reason=(judged.note or None) if judged else None)


def _judged(claim: Claim, human: ClaimState | None, judge: str) -> JudgedClaim:
    settled = human is not None and human.verdict is not None
    return JudgedClaim(claim=claim.claim, verdict=human.verdict if human is not None and settled else claim.verdict,
                       by="human" if settled else "judge", judge=judge, judge_verdict=claim.verdict,
                       source_id=claim.source_id, quote=claim.quote, reason=claim.note or None)
