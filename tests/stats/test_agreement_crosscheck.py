"""Cross-check tier (`python -m pytest -m crosscheck`, needs `pip install -e '.[crosscheck]'`): our kappa and
alpha against scikit-learn's `cohen_kappa_score` and the `krippendorff` package on random tables."""

from __future__ import annotations

import random

import pytest

from harness.stats.agreement import cohen_kappa, krippendorff_alpha_nominal

pytestmark = pytest.mark.crosscheck
VERDICTS = ("supported", "unsupported", "contradicted")


@pytest.mark.parametrize("seed", range(40))
def test_kappa_matches_scikit_learn(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(seed)
    n, categories = rng.randint(2, 60), VERDICTS[: rng.randint(2, 3)]
    first = [rng.choice(categories) for _ in range(n)]
    # the second reviewer copies the first with some probability, so kappa ranges over the whole scale
    copy = rng.random()
    second = [a if rng.random() < copy else rng.choice(categories) for a in first]
    ours = cohen_kappa(first, second)
    if len(set(first) | set(second)) == 1:
        assert ours is None
    else:
        assert ours == pytest.approx(metrics.cohen_kappa_score(first, second), abs=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_alpha_matches_krippendorff(seed):
    krippendorff = pytest.importorskip("krippendorff")
    np = pytest.importorskip("numpy")
    rng = random.Random(seed)
    reviewers, n = rng.randint(3, 6), rng.randint(2, 40)
    missing = rng.choice([0.0, 0.2, 0.5])
    table = [[rng.randrange(3) if rng.random() >= missing else None for _ in range(n)] for _ in range(reviewers)]
    items = [{str(r): VERDICTS[table[r][i]] for r in range(reviewers) if table[r][i] is not None} for i in range(n)]
    ours = krippendorff_alpha_nominal(items)
    pairable = {v for item in items if len(item) >= 2 for v in item.values()}
    if len(pairable) < 2:
        assert ours is None
        return
    data = np.array([[np.nan if v is None else float(v) for v in row] for row in table])
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"),
                                 abs=1e-9)
