"""Agreement statistics (harness/stats/agreement.py) against tables worked out by hand, and the degenerate cases."""

from __future__ import annotations

import pytest

from harness.stats.agreement import (
    bootstrap_interval,
    cohen_kappa,
    krippendorff_alpha_nominal,
    measure_agreement,
    percent_agreement,
    undefined_reason,
)

# S = supported, U = unsupported, C = contradicted
FIRST = "S S S S S U U U C C".split()
SECOND = "S S S S U U U S C U".split()


def test_cohen_kappa_hand_worked():
    """Ten claims, two reviewers:

        first:  S S S S S U U U C C
        second: S S S S U U U S C U

    Equal on claims 1-4 (S), 6-7 (U) and 9 (C): p_o = 7/10 = 0.70.
    first's shares: S 5/10, U 3/10, C 2/10; second's: S 5/10, U 4/10, C 1/10.
    p_e = 0.5*0.5 + 0.3*0.4 + 0.2*0.1 = 0.25 + 0.12 + 0.02 = 0.39.
    kappa = (0.70 - 0.39) / (1 - 0.39) = 0.31 / 0.61 = 0.508197 (to six places).
    """
    assert cohen_kappa(FIRST, SECOND) == pytest.approx(0.31 / 0.61)
    items = [{"ann": a, "bob": b} for a, b in zip(FIRST, SECOND)]
    assert percent_agreement(items) == pytest.approx(0.7)
    result = measure_agreement(items, resamples=2000)
    assert (result.coefficient, result.items, result.reviewers) == ("kappa", 10, ("ann", "bob"))
    assert result.value == pytest.approx(0.31 / 0.61) and result.reason is None
    assert result.interval.low < result.value < result.interval.high


def test_krippendorff_alpha_hand_worked():
    """Four claims, three reviewers, one rating missing (reviewer c on claim 3):

        claim 1: S S S   m=3, counts S3      -> sum_{c!=k} o_ck = (3^2 - 9) / 2 = 0
        claim 2: S U S   m=3, counts S2 U1   -> (9 - (4 + 1)) / 2 = 2
        claim 3: U U -   m=2, counts U2      -> (4 - 4) / 1 = 0
        claim 4: C U U   m=3, counts U2 C1   -> (9 - (4 + 1)) / 2 = 2

    Observed disagreement sum = 4. Pairable ratings n = 3 + 3 + 2 + 3 = 11 with n_S = 5, n_U = 5, n_C = 1,
    so sum_{c!=k} n_c n_k = n^2 - sum n_c^2 = 121 - (25 + 25 + 1) = 70.
    alpha = 1 - (n - 1) * 4 / 70 = 1 - 40/70 = 3/7 = 0.428571.
    Percent agreement: claims 1 and 3 unanimous, 2 of 4 = 0.5.
    """
    items = [{"a": "S", "b": "S", "c": "S"}, {"a": "S", "b": "U", "c": "S"}, {"a": "U", "b": "U"},
             {"a": "C", "b": "U", "c": "U"}]
    assert krippendorff_alpha_nominal(items) == pytest.approx(3 / 7)
    assert percent_agreement(items) == 0.5
    result = measure_agreement(items, resamples=500)
    assert (result.coefficient, result.value) == ("alpha", pytest.approx(3 / 7))


def test_krippendorff_alpha_published_example():
    """The nominal example of Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011): four coders,
    twelve units, missing values; the paper gives alpha = 0.743 (we get 0.743421)."""
    coders = {"A": [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
              "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
              "C": [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
              "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]}
    items = [{c: str(v[i]) for c, v in coders.items() if v[i] is not None} for i in range(12)]
    assert round(krippendorff_alpha_nominal(items), 3) == 0.743


def test_kappa_with_one_category_is_undefined():
    """Both reviewers say S on every claim: p_o = 1, p_e = 1*1 = 1, kappa = 0/0 -> None, never 1.0."""
    items = [{"ann": "S", "bob": "S"}] * 4
    assert cohen_kappa(["S"] * 4, ["S"] * 4) is None
    assert krippendorff_alpha_nominal(items) is None
    assert percent_agreement(items) == 1.0
    result = measure_agreement(items, resamples=100)
    assert result.value is None and "every verdict is 'S'" in result.reason
    assert (result.interval.low, result.interval.undefined_resamples) == (None, 100)


def test_all_agree_over_several_categories_is_one():
    """All agree, two categories: p_o = 1, p_e = 0.5*0.5 + 0.5*0.5 = 0.5, kappa = 0.5/0.5 = 1.
    Alpha: no disagreement observed, D_e > 0, alpha = 1 - 0 = 1."""
    items = [{"ann": v, "bob": v} for v in "S U S U".split()]
    assert cohen_kappa("S U S U".split(), "S U S U".split()) == 1.0
    assert krippendorff_alpha_nominal(items) == 1.0
    assert undefined_reason(items) is None


@pytest.mark.parametrize("first, second, kappa, alpha", [
    # one claim, same verdict: one category -> undefined
    (["S"], ["S"], None, None),
    # one claim, different verdicts: p_o = 0, p_e = 1*0 + 0*1 = 0, kappa = 0;
    # alpha: n = 2, n_S = n_U = 1, observed (4 - 2)/1 = 2, expected 4 - 2 = 2, alpha = 1 - 1*2/2 = 0
    (["S"], ["U"], 0.0, 0.0),
])
def test_one_claim(first, second, kappa, alpha):
    assert cohen_kappa(first, second) == kappa
    assert krippendorff_alpha_nominal([{"a": first[0], "b": second[0]}]) == alpha


def test_no_claim_rated_twice():
    items = [{"ann": "S"}, {"bob": "U"}]
    assert percent_agreement(items) is None and krippendorff_alpha_nominal(items) is None
    assert cohen_kappa([], []) is None
    result = measure_agreement(items)
    assert (result.items, result.value, result.reason) == (0, None, "no item was rated by two or more reviewers")


def test_kappa_needs_paired_verdicts():
    with pytest.raises(ValueError, match="3 verdicts against 2"):
        cohen_kappa(["S", "S", "U"], ["S", "U"])


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    items = [{"ann": a, "bob": b} for a, b in zip(FIRST * 3, SECOND * 3)]
    one = bootstrap_interval("kappa", items, seed=7, resamples=3000)
    assert one == bootstrap_interval("kappa", items, seed=7, resamples=3000)
    assert one != bootstrap_interval("kappa", items, seed=8, resamples=3000)
    assert one.low < cohen_kappa(FIRST * 3, SECOND * 3) < one.high
    with pytest.raises(ValueError):
        bootstrap_interval("kappa", items, resamples=0)


def test_a_zero_width_interval_is_called_undefined():
    # One claim, different verdicts: kappa 0, and every bootstrap resample is that one claim, so the interval is
    # [0, 0]: it shows no uncertainty because there is no variation, not because kappa is known to be 0.
    from harness.cli.common import agreement_text
    from harness.stats.agreement import AgreementReport
    result = measure_agreement([{"ann": "S", "bob": "U"}], resamples=200)
    assert (result.value, result.interval.low, result.interval.high) == (0.0, 0.0, 0.0)
    assert result.interval.text() == "interval undefined (no variation)"
    assert result.interval.to_dict()["note"] == "interval undefined (no variation)"
    assert "Cohen's kappa: 0.000 interval undefined (no variation)" in agreement_text(AgreementReport(result, ()))
    varied = measure_agreement([{"a": x, "b": y} for x, y in zip("SSUUSU", "SUUSSU")], resamples=500)
    assert varied.interval.text().startswith("[") and varied.interval.to_dict()["note"] is None
