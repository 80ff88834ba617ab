"""An analytic interval for Cohen's kappa: deterministic, no resampling, so a judge near a floor is not accepted or
refused by Monte-Carlo error.

For two raters over n items and categories 1..k, with p_ij the share of items rater 1 put in i and rater 2 in j,
p_i. and p_.j the margins, p_o = sum_i p_ii, p_e = sum_i p_i. p_.i and kappa = (p_o - p_e) / (1 - p_e), the
large-sample variance of kappa (Fleiss, Cohen and Everitt 1969, "Large sample standard errors of kappa and weighted
kappa", Psychological Bulletin 72: 323-327) is

    var = (A + B - C) / (n (1 - p_e)^2),
    A = sum_i p_ii (1 - (p_i. + p_.i)(1 - kappa))^2,
    B = (1 - kappa)^2 sum_(i != j) p_ij (p_.i + p_j.)^2,
    C = (kappa - p_e (1 - kappa))^2,

and the 95 % interval is kappa +- 1.96 sqrt(var), clipped to [-1, 1]: the standard error statsmodels' `cohens_kappa`
reports (checked in tests/stats/test_crosscheck_judge_floor.py). When one rater gave one verdict throughout, kappa
is 0 and this variance is 0 whatever the other did: the interval is undefined (None), not [0, 0]. Like every
interval built on the observed table it has width 0 at perfect agreement (p_o = 1 gives var = 0), so a floor must
not read it alone: `harness/stats/judge_floor.py` also asks for the Wilson lower bound of the judge's recall of
each verdict, which does not collapse (10 of 10: 0.722).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .precision_recall import Z_95

__all__ = ["kappa_interval"]


def kappa_interval(first: Sequence[str], second: Sequence[str], *, z: float = Z_95
                   ) -> tuple[float, float | None, float | None] | None:
    """(kappa, low, high) of two raters' verdicts on the same items in the same order, with the
    Fleiss-Cohen-Everitt interval (module docstring); low and high None when one rater gave one verdict throughout;
    None when kappa is undefined (no items, or both raters used one and the same category throughout)."""
    if len(first) != len(second):
        raise ValueError(f"kappa_interval: {len(first)} verdicts against {len(second)}; rate the same items")
    n = len(first)
    if not n:
        return None
    categories = sorted(set(first) | set(second))
    code = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    np.add.at(table, ([code[c] for c in first], [code[c] for c in second]), 1.0)
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(rows @ cols)
    if p_e >= 1 - 1e-12:
        return None
    kappa = (p_o - p_e) / (1 - p_e)
    if min(np.count_nonzero(rows), np.count_nonzero(cols)) == 1:
        return kappa, None, None
    diagonal = np.diag(p)
    a = float(diagonal @ (1 - (rows + cols) * (1 - kappa)) ** 2)
    weights = (cols[:, None] + rows[None, :]) ** 2  # (p_.i + p_j.)^2 for the cell (i, j)
    off = p * (1 - np.eye(len(categories)))
    b = (1 - kappa) ** 2 * float((off * weights).sum())
    c = (kappa - p_e * (1 - kappa)) ** 2
    spread = z * math.sqrt(max(a + b - c, 0.0) / (n * (1 - p_e) ** 2))
    return kappa, max(-1.0, kappa - spread), min(1.0, kappa + spread)
