"""Cross-check tier (`python -m pytest -m crosscheck`): the judge floor of `--judged-passed`
(`harness/stats/judge_floor.py`) against statsmodels: kappa's analytic interval against `cohens_kappa` (its
Fleiss-Cohen-Everitt standard error) on random tables, the Wilson bound against `proportion_confint`, and the
floor's decision on the constructed judges of issue 41, each recomputed with statsmodels alone."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness.stats.judge_floor import floor_check
from harness.stats.kappa_interval import kappa_interval

pytestmark = pytest.mark.crosscheck
PEOPLE = ("supported", "unsupported", "contradicted")
S, U = "supported", "unsupported"


def _statsmodels_kappa(human: list[str], judge: list[str]):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    categories = sorted(set(human) | set(judge))
    table = np.zeros((len(categories), len(categories)))
    for h, j in zip(human, judge):
        table[categories.index(h), categories.index(j)] += 1
    return inter_rater.cohens_kappa(table)


@pytest.mark.parametrize("seed", range(40))
def test_kappas_analytic_interval_is_statsmodels(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 200)
    human = [rng.choice(PEOPLE) for _ in range(n)]
    copy = rng.random()  # the judge copies people with some probability, else says anything (unverified too)
    judge = [h if rng.random() < copy else rng.choice((*PEOPLE, "unverified")) for h in human]
    ours = kappa_interval(human, judge)
    if len(set(human)) == 1 or len(set(judge)) == 1:  # a one-verdict rater: no interval (statsmodels gives width 0)
        assert ours is None or ours[1:] == (None, None)
        return
    theirs = _statsmodels_kappa(human, judge)
    assert ours is not None
    assert ours == pytest.approx((theirs.kappa, max(-1.0, theirs.kappa_low), min(1.0, theirs.kappa_upp)), abs=1e-9)


def _decision_by_statsmodels(human: list[str], judge: list[str], floor: float = 0.6) -> bool:
    """The floor of docs/judge.md recomputed with statsmodels: 30 shared claims, 10 of each verdict, kappa's lower
    bound >= floor, each verdict's recall >= 0.7 at its Wilson lower bound."""
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    group = {S: S, U: U, "contradicted": U}
    counts = {v: sum(group.get(h) == v for h in human) for v in (S, U)}
    if len(human) < 30 or min(counts.values()) < 10:
        return False
    found = {v: sum(group.get(h) == v == group.get(j) for h, j in zip(human, judge)) for v in (S, U)}
    recalls = [proportion.proportion_confint(found[v], counts[v], alpha=0.05, method="wilson")[0] for v in (S, U)]
    return _statsmodels_kappa(human, judge).kappa_low >= floor and min(recalls) >= 0.7


@pytest.mark.parametrize("human, judge, clears", [
    ([S] * 29 + [U], [S] * 29 + [U], False),  # perfect on 30, one unsupported (cleared before issue 41)
    ([S] * 38 + [U] * 2, [S] * 38 + [U] * 2, False),  # perfect on 40, two unsupported (cleared before)
    ([S] * 40 + [U] * 20, [S] * 40 + [U] * 20, True),  # perfect on 60, 20 unsupported
    ([S] * 30 + [U] * 30, [S] * 27 + [U] * 3 + [U] * 27 + [S] * 3, True),  # kappa 0.8 [0.648, 0.952] over 60
    ([S] * 20 + [U] * 10, [S] * 20 + [U] * 7 + ["unverified"] * 3, False),  # finds 7 of 10 unsupported
    ([S] * 20 + [U] * 20, [S] * 10 + [U] * 10 + [S] * 10 + [U] * 10, False),  # kappa 0 over 40
])
def test_the_floor_decides_the_constructed_judges_as_statsmodels_does(human, judge, clears):
    check = floor_check(human, judge, floor=0.6)
    assert (not check.reasons) == clears == _decision_by_statsmodels(human, judge)


@pytest.mark.parametrize("seed", range(30))
def test_the_floor_decides_random_judges_as_statsmodels_does(seed):
    rng = random.Random(seed)
    n = rng.randint(20, 120)
    human = [rng.choice(PEOPLE) for _ in range(n)]
    copy = rng.uniform(0.7, 1.0)
    judge = [h if rng.random() < copy else rng.choice((*PEOPLE, "unverified")) for h in human]
    assert (not floor_check(human, judge, floor=0.6).reasons) == _decision_by_statsmodels(human, judge)
