"""compare's numbers on a fixed pair of runs (tests/stats/pinned_pair.py) are those it gave before issue 31 made it
linear: every figure below is from `compare_rows` at commit 34cc99a, same inputs, seed 0 and 10,000 resamples,
except the intervals and rr's Monte-Carlo p, which issue 41 changed: the intervals are the score intervals
(harness/stats/score_interval.py, computed, no draws), and with no bootstrap drawn first rr's sign vectors are the
generator's first draws. The pair is small enough (300 cases) for the draws to be made per case, as they were then
(harness/stats/draws.py), so every digit must stay; through the streaming reader of run directories too."""

from __future__ import annotations

from harness.report.compare import compare_rows, compare_runs
from harness.runs import write_rows
from tests.stats.pinned_pair import pinned_pair

PINNED = {
    "hit@1": {"n": 299, "unpaired": 1, "mean_a": 0.5585284280936454, "mean_b": 0.6488294314381271,
              "delta": 0.0903010033444816, "ci_low": 0.010907395008350858, "ci_high": 0.16857718946331157,
              "p_value": 0.03164540941802382, "wins": 87, "ties": 152, "losses": 60, "mde": 0.1159874013435083,
              "mde_status": "ok", "p_method": "exact-binomial", "differing": 147, "ci_method": "Tango score",
              "mde_method": "exact sign test"},
    "rr": {"n": 299, "unpaired": 1, "mean_a": 0.49637681159420294, "mean_b": 0.5013935340022296,
           "delta": 0.00501672240802675, "ci_low": -0.03960986759018651, "ci_high": 0.049568642994926464,
           "p_value": 0.8356164383561644, "wins": 110, "ties": 68, "losses": 121, "mde": 0.06345500116762907,
           "mde_status": "ok", "p_method": "monte-carlo", "differing": 231, "ci_method": "scaled score",
           "mde_method": "sign-flip, simulated"},
    "facts": {"n": 271, "unpaired": 1, "mean_a": 0.5, "mean_b": 0.496309963099631, "delta": -0.0036900369003690036,
              "ci_low": -0.01555005918983813, "ci_high": 0.007451955517024486, "p_value": 0.6027832031250001,
              "wins": 8, "ties": 257, "losses": 6, "mde": 0.013138640850672423, "mde_status": "ok",
              "p_method": "exact", "differing": 14, "ci_method": "scaled score",
              "mde_method": "sign-flip, exact"},
    "passed": {"n": 300, "unpaired": 0, "mean_a": 0.29333333333333333, "mean_b": 0.29,
               "delta": -0.0033333333333333335, "ci_low": -0.07766512555424102, "ci_high": 0.07102849514313478,
               "p_value": 1.0,
               "wins": 64, "ties": 171, "losses": 65, "mde": 0.10844974517822265, "mde_status": "ok",
               "p_method": "exact-binomial", "differing": 129, "ci_method": "Tango score",
               "mde_method": "exact sign test"},
}
FLIPS = {"hit@1": (("c0", "c4", "c13"), 87, ("c1", "c6", "c9"), 60),
         "rr": (("c1", "c11", "c16"), 110, ("c7", "c10", "c12"), 121),
         "facts": (("c37", "c74", "c111"), 8, ("c1", "c54", "c107"), 6),
         "passed": (("c4", "c13", "c17"), 64, ("c5", "c7", "c14"), 65)}


def _check(comparison) -> None:
    assert [m.metric for m in comparison.metrics] == list(PINNED)
    for m in comparison.metrics:
        got = m.to_dict()
        assert {k: got[k] for k in PINNED[m.metric]} == PINNED[m.metric], m.metric
        assert (m.fixed[:3], len(m.fixed), m.broke[:3], len(m.broke)) == FLIPS[m.metric]
    assert (comparison.cases, comparison.errored) == (300, {"a": 0, "b": 1})
    assert comparison.review == {"a": {"pending": 301, "reviewed": 0}, "b": {"pending": 301, "reviewed": 0}}


def test_compare_rows_keeps_every_digit_on_the_pinned_pair():
    _check(compare_rows(*pinned_pair()))


def test_compare_runs_reads_the_same_numbers_from_run_directories(tmp_path):
    dirs = []
    for run in pinned_pair():
        folder = tmp_path / run.name
        folder.mkdir()
        (folder / "manifest.json").write_text(run.manifest.model_dump_json(), encoding="utf-8")
        write_rows(folder, run.rows)
        dirs.append(folder)
    result = compare_runs(*dirs)
    _check(result)
    assert (result.run_a, result.run_b) == ("A", "B")
