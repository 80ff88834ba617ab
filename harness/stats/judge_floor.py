"""Whether a judge's verdicts agree with people's enough to stand in for them (`--judged-passed`): verdicts in,
a decision and its reasons out, with no resampling, so the same verdicts always give the same decision.

Over the claims both people and the judge rated (`human[i]`, `judge[i]`), the judge clears when all hold:

1. at least `MIN_SHARED` (30) shared claims;
2. people gave each verdict the judge is trusted with (`FLOOR_VERDICTS`: supported, and unsupported, where people's
   contradicted counts as unsupported, as it does for `passed`) on at least `MIN_PER_VERDICT` (10) of them: a
   judge checked on one unsupported claim has shown nothing about unsupported claims, whatever kappa says;
3. the lower end of kappa's analytic 95 % interval (Fleiss, Cohen and Everitt 1969, `kappa_interval.py`) is at
   least the floor (`--min-judge-kappa`, default 0.6: where Landis and Koch's "substantial" agreement begins);
4. the Wilson 95 % lower bound of the judge's recall of each of those verdicts (how many of the people's it gives
   too; its own `unverified` finds neither) is at least `MIN_RECALL` (0.7). This is the part that cannot collapse:
   kappa's interval has width 0 at perfect agreement, the Wilson bound of 10 of 10 is 0.722 and of 1 of 1 0.207.

When 1 or 2 fails, the reasons say how many more claims of which verdict to review, and 3 and 4 are not judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .kappa_interval import kappa_interval
from .precision_recall import per_category, wilson_interval

__all__ = ["FLOOR_VERDICTS", "MIN_PER_VERDICT", "MIN_RECALL", "MIN_SHARED", "FloorCheck", "VerdictCheck",
           "floor_check"]

MIN_SHARED = 30  # shared claims before a judge counts as measured
FLOOR_VERDICTS = ("supported", "unsupported")
MIN_PER_VERDICT = 10
MIN_RECALL = 0.7
_GROUP = {"supported": "supported", "unsupported": "unsupported", "contradicted": "unsupported"}


@dataclass(frozen=True)
class VerdictCheck:
    """One verdict of `FLOOR_VERDICTS`: how many shared claims people gave it (`people`), how many of those the judge
    gave it too (`found`), and the Wilson 95 % lower bound of that recall."""

    verdict: str
    people: int
    found: int

    @property
    def recall_low(self) -> float | None:
        interval = wilson_interval(self.found, self.people)
        return None if interval is None else interval[0]

    def text(self) -> str:
        low = self.recall_low
        return f"{self.verdict} {self.found}/{self.people}" + ("" if low is None else f" (>= {low:.3f})")


@dataclass(frozen=True)
class FloorCheck:
    """kappa with its analytic interval (None when undefined), the per-verdict checks and every reason the judge does
    not clear (empty: it clears)."""

    kappa: float | None
    low: float | None
    high: float | None
    verdicts: tuple[VerdictCheck, ...]
    reasons: tuple[str, ...]


def called(verdict: str) -> str:
    """How a reason names a verdict people gave."""
    return "unsupported (or contradicted)" if verdict == "unsupported" else verdict


def floor_check(human: Sequence[str], judge: Sequence[str], *, floor: float) -> FloorCheck:
    """The four conditions of the module docstring over these shared claims, in the same order."""
    interval = kappa_interval(human, judge)
    kappa, low, high = interval if interval is not None else (None, None, None)
    scores = per_category([_GROUP.get(h, h) for h in human], [_GROUP.get(j, j) for j in judge], FLOOR_VERDICTS)
    checks = tuple(VerdictCheck(s.category, people=s.reference, found=s.hits) for s in scores)
    return FloorCheck(kappa, low, high, checks, tuple(_reasons(len(human), kappa, low, floor, checks)))


def _reasons(shared: int, kappa: float | None, low: float | None, floor: float,
             checks: Sequence[VerdictCheck]) -> list[str]:
    reasons = []
    if shared < MIN_SHARED:
        reasons.append(f"only {shared} claims shared with people, {MIN_SHARED} needed: review at least "
                       f"{MIN_SHARED - shared} more")
    for v in checks:
        if v.people < MIN_PER_VERDICT:
            noun = "claim" if v.people == 1 else "claims"
            reasons.append(f"people called {v.people} shared {noun} {called(v.verdict)}, {MIN_PER_VERDICT} needed: "
                           f"review at least {MIN_PER_VERDICT - v.people} more {v.verdict} claims")
    if reasons:
        return reasons
    if kappa is None:
        return ["kappa is undefined (people and the judge used one verdict throughout)"]
    if low is None:
        reasons.append("kappa's interval is undefined: people or the judge gave one verdict throughout")
    elif low < floor:
        reasons.append(f"kappa's lower bound {low:.3f} is below the floor {floor:g}")
    for v in checks:
        if v.recall_low is not None and v.recall_low < MIN_RECALL:
            reasons.append(f"the judge finds {v.found} of the {v.people} claims people called {called(v.verdict)}: "
                           f"its recall's lower bound {v.recall_low:.3f} is below {MIN_RECALL:g}")
    return reasons
