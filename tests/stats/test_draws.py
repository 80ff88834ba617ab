"""`harness.stats.draws`: the bootstrap and sign-flip draws made from the counts of distinct differences (or from
the nonzero cases alone) follow the same distributions as the per-case draws they replace above PER_CASE_CELLS,
and below it the per-case draws are used, as before."""

from __future__ import annotations

import numpy as np
import pytest

from harness.stats import draws
from harness.stats.draws import PER_CASE_CELLS, bootstrap_means, extreme_sign_flips

RESAMPLES = 10_000


def _zero_one_differences(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.2, 0.5, 0.3])


def _many_values(n: int, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = rng.normal(0.02, 0.3, size=n)
    d[rng.random(n) < 0.4] = 0.0  # ties
    return d


@pytest.mark.parametrize("make, path", [(_zero_one_differences, "_counted_means"), (_many_values, "_nonzero_means")])
def test_bootstrap_from_counts_matches_the_per_case_bootstrap(make, path, monkeypatch):
    d = make(5_000)
    assert len(d) * RESAMPLES > PER_CASE_CELLS  # the fast path is the one taken
    used = []
    original = getattr(draws, path)
    monkeypatch.setattr(draws, path, lambda *a: used.append(path) or original(*a))
    fast = bootstrap_means(d, np.random.default_rng(0), RESAMPLES)
    slow = draws._per_case_means(d, np.random.default_rng(1), RESAMPLES)
    assert used == [path]
    # the resample mean's spread is sd(d) / sqrt(n): both within Monte-Carlo error (2 % at 10,000 resamples)
    se = d.std() / np.sqrt(len(d))
    for means in (fast, slow):
        assert means.mean() == pytest.approx(d.mean(), abs=4 * se / np.sqrt(RESAMPLES))
        assert means.std() == pytest.approx(se, rel=0.04)
    assert np.percentile(fast, [2.5, 97.5]) == pytest.approx(np.percentile(slow, [2.5, 97.5]), abs=0.1 * se)


def test_resampling_one_value_gives_that_value():
    d = np.full(3_000, 0.25)
    assert set(bootstrap_means(d, np.random.default_rng(0), RESAMPLES)) == {0.25}


@pytest.mark.parametrize("make", [_zero_one_differences, _many_values])
def test_sign_flips_from_counts_match_per_case_sign_flips(make):
    # the sizes of `make` with random signs: a p mid-range, where two estimates can be told apart
    d = np.abs(make(5_000)) * np.random.default_rng(11).choice([-1.0, 1.0], size=5_000)
    fast = extreme_sign_flips(d, np.random.default_rng(0), RESAMPLES) / RESAMPLES
    rng = np.random.default_rng(1)
    slow = np.mean([np.abs(rng.choice([-1.0, 1.0], size=(400, len(d))) @ d) >= abs(d.sum()) - 1e-9
                    for _ in range(10)])  # in blocks: the test process stays small for the tests that follow
    assert 0.05 < slow < 0.95
    assert fast == pytest.approx(slow, abs=4 * np.sqrt(slow * (1 - slow) / 4_000))


@pytest.mark.parametrize("make, path", [(_zero_one_differences, "_counted_sums"), (_many_values, "_signed_sums")])
def test_the_null_sums_have_the_sign_flip_variance(make, path):
    # under random signs sum_i s_i |d_i| has mean 0 and variance sum_i d_i**2, exactly
    sizes = np.abs(make(5_000))
    sizes = sizes[sizes > 0]
    if path == "_counted_sums":
        values, counts = np.unique(sizes, return_counts=True)
        sums = draws._counted_sums(values, counts, np.random.default_rng(0), RESAMPLES)
    else:
        sums = draws._signed_sums(sizes, np.random.default_rng(0), RESAMPLES)
    spread = np.sqrt((sizes**2).sum())
    assert sums.mean() == pytest.approx(0.0, abs=4 * spread / np.sqrt(RESAMPLES))
    assert sums.std() == pytest.approx(spread, rel=0.04)


def test_below_the_cell_budget_the_draws_are_per_case_as_before():
    # the same generator state, the same numbers: the per-case draws are what paired_stats made before issue 31
    # (in blocks of 2,000 resamples of these 1,000 cases, as paired_stats drew them)
    d = _many_values(1_000)
    assert len(d) * RESAMPLES <= PER_CASE_CELLS
    rng = np.random.default_rng(3)
    means = np.concatenate([d[rng.integers(0, len(d), size=(2_000, len(d)))].mean(axis=1) for _ in range(5)])
    assert np.array_equal(bootstrap_means(d, np.random.default_rng(3), RESAMPLES), means)
    rng = np.random.default_rng(4)
    expected = sum(int(np.sum(np.abs(rng.choice(np.array([-1.0, 1.0]), size=(2_000, len(d))) @ d / len(d))
                              >= abs(d.mean()) - 1e-12)) for _ in range(5))
    assert extreme_sign_flips(d, np.random.default_rng(4), RESAMPLES) == expected
