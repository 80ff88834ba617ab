"""`harness.report.compare` and `rag-eval compare`: paired statistics on hand-made runs whose answers we know, then
two offline runs of the sample with different chunk sizes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.records import Manifest
from harness.report.compare import compare_rows, compare_runs, manifest_diff
from harness.runs import LoadedRun, read_rows
from harness.settings import RunSettings
from harness.stats.mde import NOT_DETECTABLE
from harness.stats.paired import paired_stats, sign_flip_p
from pdfrag.errors import InputError
from tests.support.rowkit import make_row as _row

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_docs"


def _run(name: str, rows: list, metrics=("hit@1", "facts"), **manifest) -> LoadedRun:
    return LoadedRun(name, Path(name), tuple(rows), Manifest(run_id=name, metrics=list(metrics), **manifest))


# Four cases: hit@1 goes 0->1 (c1, c4), 1->0 (c2), 1->1 (c3); facts is paired on c1 and c2 only.
A = _run("A", [_row("c1", {"hit@1": 0.0, "facts": 0.5}, tags=["dev"]),
               _row("c2", {"hit@1": 1.0, "facts": 1.0}, tags=["dev"]),
               _row("c3", {"hit@1": 1.0, "facts": None}, tags=["heldout"]),
               _row("c4", {"hit@1": 0.0, "facts": 0.5}, tags=["heldout"])])
B = _run("B", [_row("c1", {"hit@1": 1.0, "facts": 1.0}, tags=["dev"]),
               _row("c2", {"hit@1": 0.0, "facts": 0.5}, tags=["dev"]),
               _row("c3", {"hit@1": 1.0, "facts": None}, tags=["heldout"]),
               _row("c4", {"hit@1": 1.0, "facts": None}, tags=["heldout"], reviewed=True)])


def test_hand_made_pair_means_deltas_and_flips():
    c = compare_rows(A, B)
    hit, facts = c.metrics
    assert (hit.n, hit.mean_a, hit.mean_b, hit.delta) == (4, 0.5, 0.75, 0.25)
    assert (hit.wins, hit.ties, hit.losses) == (2, 1, 1)
    assert hit.fixed == ("c1", "c4") and hit.broke == ("c2",)
    # d = (+1, -1, 0, +1): |sum of three signs| is odd, so every sign vector is at least as extreme: p = 1 exactly.
    assert hit.p_value == 1.0
    assert hit.ci_low <= hit.delta <= hit.ci_high
    assert (facts.n, facts.unpaired, facts.mean_a, facts.mean_b, facts.delta) == (2, 1, 0.75, 0.75, 0.0)
    assert (facts.wins, facts.ties, facts.losses, facts.fixed, facts.broke) == (1, 0, 1, ("c1",), ("c2",))
    assert c.review == {"a": {"pending": 4, "reviewed": 0}, "b": {"pending": 3, "reviewed": 1}}
    assert (c.seed, c.resamples, c.cases) == (0, 10_000, 4)


def test_identical_runs_have_p_one_and_an_interval_that_does_not_collapse():
    # No case differs among 4: Tango's interval for W = L = 0 solves n delta / (1 - delta) = z**2 at each end
    # (the restricted loss probability is 0 above 0), so it is +-z**2 / (n + z**2) = +-0.490, not [0, 0]: no
    # difference seen in 4 cases does not show there is none.
    m = compare_rows(A, A).metrics[0]
    z2 = 1.959963984540054 ** 2
    assert (m.delta, m.p_value, m.ci_method) == (0.0, 1.0, "Tango score")
    assert (m.ci_low, m.ci_high) == (pytest.approx(-z2 / (4 + z2)), pytest.approx(z2 / (4 + z2)))
    # 20 cases better by unequal amounts: 2**20 sign vectors, drawn at random; the two extreme vectors are (almost
    # surely) never drawn, so p is the +1-smoothed floor 1 / (resamples + 1), never 0.
    s = paired_stats(np.zeros(20), 1 + np.arange(20) / 100)
    assert s.p_method == "monte-carlo" and s.p_value == pytest.approx(1 / 10_001) and s.at_floor


def test_the_monte_carlo_p_is_seeded_and_is_sign_flip_ps():
    # 40 unequal differences among 60: the Monte-Carlo p of paired_stats is the one sign_flip_p draws (the sign
    # vectors are the generator's first draws in both), another seed moves it, and the interval has no seed.
    rng = np.random.default_rng(29)
    a = np.round(rng.random(60), 2)
    b = a.copy()
    b[:40] = np.round(rng.random(40), 2)
    s = paired_stats(a, b, seed=3)
    assert (s.p_method, s.ci_method) == ("monte-carlo", "scaled score")
    assert (s.p_value, s.p_method) == sign_flip_p(a, b, seed=3)
    other = paired_stats(a, b, seed=4)
    assert other.p_value != s.p_value and (other.ci_low, other.ci_high) == (s.ci_low, s.ci_high)


def test_with_many_cases_the_interval_is_the_normal_approximation():
    # 400 cases, a 0/1 metric 0 in A and about 30 % 1 in B: Tango's interval is then close to delta +- 1.96 se.
    rng = np.random.default_rng(7)
    a, b = np.zeros(400), (rng.random(400) < 0.3).astype(float)
    s = paired_stats(a, b, seed=3)
    se = math.sqrt(b.mean() * (1 - b.mean()) / len(b))
    assert s.ci_low < s.delta < s.ci_high
    assert (s.ci_high - s.ci_low) == pytest.approx(2 * 1.96 * se, rel=0.05)
    c = rng.random(400)  # continuous differences: the scaled interval, near the t interval of the mean
    s = paired_stats(a, c)
    assert (s.ci_high - s.ci_low) == pytest.approx(2 * 1.96 * c.std() / math.sqrt(400), rel=0.05)


def test_repeats_are_averaged_per_case():
    ra = _run("A", [_row("c1", {"hit@1": 0.0}, repeat=0), _row("c1", {"hit@1": 1.0}, repeat=1)], metrics=["hit@1"])
    rb = _run("B", [_row("c1", {"hit@1": 1.0}, repeat=0), _row("c1", {"hit@1": 1.0}, repeat=1)], metrics=["hit@1"])
    m = compare_rows(ra, rb).metrics[0]
    assert (m.n, m.mean_a, m.mean_b, m.fixed) == (1, 0.5, 1.0, ("c1",))


def test_different_case_sets_are_refused_unless_shared_only():
    b3 = _run("B", list(B.rows[:3]) + [_row("c9", {"hit@1": 1.0, "facts": 1.0})])
    with pytest.raises(InputError, match=r"1 only in A \(c4\), 1 only in B \(c9\); pass --shared-only"):
        compare_rows(A, b3)
    c = compare_rows(A, b3, shared_only=True)
    assert (c.cases, c.only_in_a, c.only_in_b) == (3, ("c4",), ("c9",))
    assert c.metrics[0].fixed == ("c1",)


def test_tag_restricts_to_cases_carrying_it():
    c = compare_rows(A, B, tag="heldout")
    assert c.cases == 2 and c.metrics[0].fixed == ("c4",) and c.metrics[0].broke == ()
    with pytest.raises(InputError, match="tags in these runs: dev, heldout"):
        compare_rows(A, B, tag="nope")


def test_manifest_diff_sections_and_noise():
    base = {"run_id": "r1", "started_at": "t1", "command": ["x"], "git_commit": "aaa", "package_version": "0.1.0",
            "settings": {"chunk_size": 1500, "label": "a", "out": "results", "top_k": 4},
            "prompt_template": {"source": "p.txt", "sha256": "p1"},
            "system": {"ollama": {"models": {"qwen3:4b": {"digest": "d1"}}}},
            "inputs": {"cases": {"path": "c.jsonl", "sha256": "c1"},
                       "documents": [{"doc_id": "a.pdf", "sha256": "h1"}, {"doc_id": "b.pdf", "sha256": "h2"}]}}
    other = json.loads(json.dumps(base))
    other.update(run_id="r2", started_at="t2", command=["y"], git_commit="bbb")
    other["settings"].update(chunk_size=600, label="b", out="elsewhere")
    other["prompt_template"]["sha256"] = "p2"
    other["system"]["ollama"]["models"]["qwen3:4b"]["digest"] = "d2"
    other["inputs"]["documents"] = [{"doc_id": "a.pdf", "sha256": "h1x"}]
    assert manifest_diff(base, other) == [
        ("settings.chunk_size", 1500, 600),
        ("prompt_template.sha256", "p1", "p2"),
        ("system.ollama.models.qwen3:4b.digest", "d1", "d2"),
        ("inputs.documents[a.pdf].sha256", "h1", "h1x"),
        ("inputs.documents[b.pdf].sha256", "h2", None),
        ("code.git_commit", "aaa", "bbb"),
    ]
    assert manifest_diff(base, base) == []


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    common = dict(system="offline", out=str(out), docs=str(SAMPLE / "handbook.pdf"), cases=str(SAMPLE / "cases.jsonl"))
    a = run_evaluation(RunSettings(label="a", chunk_size=1500, **common)).run_dir
    b = run_evaluation(RunSettings(label="b", chunk_size=600, **common)).run_dir
    return a, b


def test_sample_runs_with_different_chunk_sizes(sample_runs):
    a, b = sample_runs
    c = compare_runs(a, b)
    rows_a = {r.case_id: r for r in read_rows(a)}
    rows_b = {r.case_id: r for r in read_rows(b)}
    assert c.cases == 21
    for m in c.metrics:
        pairs = {i: (rows_a[i].metrics[m.metric], rows_b[i].metrics[m.metric]) for i in rows_a}
        pairs = {i: v for i, v in pairs.items() if None not in v}
        assert m.n == len(pairs)
        assert set(m.fixed) == {i for i, (x, y) in pairs.items() if y > x}
        assert set(m.broke) == {i for i, (x, y) in pairs.items() if y < x}
        if m.n:
            assert m.delta == pytest.approx(m.mean_b - m.mean_a)
            assert m.ci_low - 1e-12 <= m.delta <= m.ci_high + 1e-12
            assert 0 < m.p_value <= 1
    diff = dict((k, (x, y)) for k, x, y in c.manifest_diff)
    assert diff["settings.chunk_size"] == (1500, 600)
    assert "settings.label" not in diff and not any(k.startswith("inputs.") for k in diff)


def test_cli_table_json_and_markdown(sample_runs, capsys):
    a, b = sample_runs
    assert main(["compare", str(a), str(b)]) == 0
    table = capsys.readouterr().out
    assert "metric" in table and "95% CI" in table and "W/T/L" in table
    assert "flips (fixed = better in B, broke = worse in B):" in table
    assert "settings.chunk_size" in table and "1500 -> 600" in table
    assert main(["compare", str(a), str(b), "--json", "--resamples", "500", "--seed", "9"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["seed"], data["resamples"], data["cases"]) == (9, 500, 21)
    assert {"key": "settings.chunk_size", "a": 1500, "b": 600} in data["manifest_diff"]
    assert {m["metric"] for m in data["metrics"]} >= {"hit@1", "rr", "facts", "claims_supported"}
    assert main(["compare", str(a), str(b), "--markdown", "--tag", "heldout"]) == 0
    md = capsys.readouterr().out
    assert "| metric | n | A | B | delta | 95% CI | p | W/T/L |" in md and "cases tagged 'heldout'" in md


def test_cli_refuses_different_case_sets_with_exit_2(sample_runs, tmp_path, capsys):
    a, b = sample_runs
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "manifest.json").write_text((b / "manifest.json").read_text())
    (cut / "rows.jsonl").write_text("\n".join((b / "rows.jsonl").read_text().splitlines()[:-2]) + "\n")
    assert main(["compare", str(a), str(cut)]) == 2
    assert "2 only in A" in capsys.readouterr().err
    assert main(["compare", str(a), str(cut), "--shared-only"]) == 0
    assert "left out: 2 cases only in A" in capsys.readouterr().out


def test_compare_reports_the_smallest_detectable_difference():
    # 0/1 metric, 18 cases, 4 of which differ: even if all 4 went one way the exact sign test would have 19 %
    # power (tests/stats/test_mde.py), so the difference is "not detectable with these cases", never an MDE > p_d.
    from harness.report.compare_text import render_markdown, render_table
    a = _run("A", [_row(f"c{i}", {"hit@1": 1.0, "facts": 1.0}) for i in range(18)])
    b = _run("B", [_row(f"c{i}", {"hit@1": 0.0 if i < 4 else 1.0, "facts": 1.0}) for i in range(18)])
    c = compare_rows(a, b)
    hit = next(m for m in c.metrics if m.metric == "hit@1")
    assert (hit.mde, hit.mde_status) == (None, "not detectable with these cases")
    facts = next(m for m in c.metrics if m.metric == "facts")
    assert (facts.mde, facts.mde_status) == (None, "no case differs")  # no spread to scale by
    assert "mde_status" in hit.to_dict()
    for text in (render_table(c), render_markdown(c)):
        assert "n/d: not detectable with these cases: hit@1 (4 differ)" in text
    wide = _run("B", [_row(f"c{i}", {"hit@1": 0.0 if i < 9 else 1.0, "facts": 1.0}) for i in range(18)])
    assert next(m for m in compare_rows(a, wide).metrics if m.metric == "hit@1").mde <= 9 / 18


def test_recall_with_one_differing_case_and_rr_with_three_print_not_detectable():
    # Issue #29's constructed cases: recall@1 (fractional: two evidence items) differs on 1 case, rr on 3; compare
    # printed "MDE 0.017" and "MDE 0.015" (p 0.237) from a paired t power. The sign-flip test's smallest p with D
    # differing cases is 2 / 2**D: 1 and 0.25 here, so nothing is detectable.
    from harness.report.compare_text import render_markdown, render_table
    metrics = ("recall@1", "rr")
    a = _run("A", [_row(f"c{i}", {"recall@1": 0.5, "rr": 1.0}) for i in range(57)] +
             [_row("x1", {"recall@1": 0.5, "rr": 1 / 2}), _row("x2", {"recall@1": 0.5, "rr": 1 / 3}),
              _row("x3", {"recall@1": 1.0, "rr": 1.0})], metrics=metrics)
    b = _run("B", [_row(f"c{i}", {"recall@1": 0.5, "rr": 1.0}) for i in range(57)] +
             [_row("x1", {"recall@1": 0.5, "rr": 1.0}), _row("x2", {"recall@1": 0.5, "rr": 1 / 2}),
              _row("x3", {"recall@1": 0.5, "rr": 1 / 4})], metrics=metrics)
    c = compare_rows(a, b)
    for m, differing in zip(c.metrics, (1, 3)):
        assert (m.differing, m.mde, m.mde_status, m.mde_method) == (differing, None, NOT_DETECTABLE,
                                                                    "sign-flip, exact")
    table = render_table(c)
    assert all(line.split()[-1] == "n/d" for line in table.splitlines() if line.startswith(("recall@1 ", "rr ")))
    for text in (table, render_markdown(c)):
        assert "n/d: not detectable with these cases: recall@1 (1 differ), rr (3 differ)." in text


def test_eight_cases_all_better_reach_past_the_observed_delta():
    # 195 cases, 8 better by 1 in B, the rest tied (issue 41): the inverted sign-flip interval of before was
    # [+0.011, +0.041], its far end the observed delta 8/195 itself. Tango's lets the discordance be estimated:
    # [+0.021, +0.079], and it agrees with p (exact 2 / 2**8 = 0.0078): no note.
    from harness.report.compare_text import render_table
    a = _run("A", [_row(f"c{i}", {"hit@1": 0.0, "facts": 1.0}) for i in range(195)])
    b = _run("B", [_row(f"c{i}", {"hit@1": 1.0 if i < 8 else 0.0, "facts": 1.0}) for i in range(195)])
    c = compare_rows(a, b)
    hit = c.metrics[0]
    assert (hit.p_value, hit.ci_method, hit.differing, hit.notes) == (pytest.approx(2 / 2**8), "Tango score", 8, ())
    assert hit.ci_high >= 0.07 and hit.ci_high == pytest.approx(0.0789, abs=1e-4)
    assert hit.ci_low == pytest.approx(0.0209, abs=1e-4)
    assert ("interval: a score interval that lets the number of differing cases vary (its far end can pass the "
            "observed delta), Tango's for 0/1 metrics") in render_table(c)


@pytest.mark.parametrize("seed", range(30))
def test_the_interval_excludes_zero_exactly_when_the_normal_sign_flip_statistic_passes_196(seed):
    # At delta = 0 the score statistic is sum(d) / sqrt(sum(d**2)) (McNemar's (W - L) / sqrt(W + L) for 0/1), so
    # the interval excludes 0 exactly when that exceeds 1.96; and it always holds the observed delta.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    d = np.zeros(n)
    differing = int(rng.integers(1, min(n, 60)))
    sizes = rng.choice([1.0, 0.5, 1 / 3, 0.25], differing) if seed % 2 else np.ones(differing)
    d[:differing] = sizes * np.where(rng.random(differing) < rng.uniform(0.5, 1.0), 1.0, -1.0)
    s = paired_stats(np.zeros(n), d)
    assert s.ci_method == ("scaled score" if seed % 2 and len(set(sizes)) > 1 else "Tango score")
    assert s.ci_low <= s.delta <= s.ci_high
    statistic = abs(d.sum()) / math.sqrt((d * d).sum())
    if abs(statistic - 1.959963984540054) > 1e-6:
        assert (s.ci_low > 0 or s.ci_high < 0) == (statistic > 1.959963984540054)


def test_six_better_sixteen_worse_carries_the_note_in_every_view(capsys, tmp_path):
    # 195 cases, 6 better in B and 16 worse (issue 41): the exact binomial p is 2 * P(X <= 6), X ~ Binomial(22, 1/2)
    # = 0.0525, while McNemar's statistic is 10 / sqrt(22) = 2.13 > 1.96, so Tango's interval excludes 0. The note
    # says so beside the metric in the table, the Markdown and --json alike.
    from harness.report.compare_text import render_markdown, render_table
    a = _run("A", [_row(f"c{i}", {"hit@1": 1.0 if 6 <= i < 22 else 0.0, "facts": 1.0}) for i in range(195)])
    b = _run("B", [_row(f"c{i}", {"hit@1": 1.0 if i < 6 else 0.0, "facts": 1.0}) for i in range(195)])
    c = compare_rows(a, b)
    hit = c.metrics[0]
    assert hit.p_value == pytest.approx(2 * sum(math.comb(22, k) for k in range(7)) / 2**22)
    assert f"{hit.p_value:.4f}" == "0.0525" and hit.ci_high < 0
    assert (round(hit.ci_low, 3), round(hit.ci_high, 3)) == (-0.103, -0.004)
    assert len(hit.notes) == 1 and hit.notes[0].startswith("the interval excludes 0 but p > 0.05")
    assert hit.to_dict()["notes"] == list(hit.notes)
    for text in (render_table(c), render_markdown(c)):
        assert f"note: hit@1: {hit.notes[0]}" in text
    assert c.metrics[1].notes == () and c.metrics[1].to_dict()["notes"] == []


def test_p_method_follows_the_differing_cases():
    # A 0/1 metric is the exact binomial at any n; a metric of unequal differences is enumerated up to 16 differing
    # cases and sampled above, whatever n and the resamples.
    from harness.report.compare_text import render_table
    for n, rr, method in ((13, "exact-binomial", "exact"), (16, "exact-binomial", "exact"),
                          (17, "exact-binomial", "monte-carlo"), (162, "exact-binomial", "monte-carlo")):
        a = _run("A", [_row(f"c{i}", {"hit@1": 0.0, "facts": 0.0}) for i in range(n)])
        b = _run("B", [_row(f"c{i}", {"hit@1": float(i % 2), "facts": 1 / (2 + i)}) for i in range(n)])
        c = compare_rows(a, b)
        assert [m.p_method for m in c.metrics] == [rr, method]
        text = render_table(c)
        assert ("sign-flip p over the cases that differ (ties count for nothing): exact binomial when they all "
                "differ by the same amount (0/1 metrics), exact over every sign vector when 16 or fewer differ, "
                "Monte-Carlo (10000 resamples; `< 1e-4` at its floor) above") in text
        label = "exact" if method == "exact" else "Monte-Carlo"
        assert f"here exact binomial for hit@1; {label} for facts" in text
    assert compare_rows(A, B, resamples=8).metrics[0].p_method == "exact-binomial"


def test_a_monte_carlo_p_at_its_floor_prints_below_one_in_ten_thousand():
    from harness.report.compare_text import render_markdown, render_table
    a = _run("A", [_row(f"c{i}", {"hit@1": 1.0, "facts": 0.25}) for i in range(30)])
    b = _run("B", [_row(f"c{i}", {"hit@1": 1.0, "facts": 0.5 + i / 100}) for i in range(30)])
    c = compare_rows(a, b)
    facts = c.metrics[1]
    assert (facts.p_method, facts.p_value) == ("monte-carlo", pytest.approx(1 / 10_001))
    line = next(x for x in render_table(c).splitlines() if x.startswith("facts"))
    assert line.split()[-4:-2] == ["<", "1e-4"]  # the p column (then W/T/L, MDE); never 0.000
    assert "| < 1e-4 |" in render_markdown(c)
    assert facts.to_dict()["p_value"] == pytest.approx(1 / 10_001)  # JSON keeps the number


def _with_errors():
    """Six cases; in B, c0..c2 errored (no metric values), c3..c5 pass as in A."""
    metrics = ("passed", "hit@1")
    a = _run("A", [_row(f"c{i}", {"passed": 1.0, "hit@1": 1.0}) for i in range(6)], metrics=metrics)
    b = _run("B", [_row(f"c{i}", {"passed": None, "hit@1": None}, error="timed out") if i < 3
                   else _row(f"c{i}", {"passed": 1.0, "hit@1": 1.0}) for i in range(6)], metrics=metrics)
    return a, b


def test_errored_cases_count_0_on_the_primary_metric_and_drop_out_of_the_others():
    from harness.report.compare_text import render_table
    a, b = _with_errors()
    c = compare_rows(a, b)
    passed, hit = (next(m for m in c.metrics if m.metric == name) for name in ("passed", "hit@1"))
    assert c.primary == "passed" and c.errored == {"a": 0, "b": 3}
    assert (passed.n, passed.mean_b, passed.delta, passed.broke) == (6, 0.5, -0.5, ("c0", "c1", "c2"))
    assert (hit.n, hit.unpaired, hit.delta) == (3, 3, 0.0)
    text = render_table(c)
    assert "errored cases: A 0, B 3 (each counts 0 on passed and is left out of the other metrics)" in text
    other = compare_rows(a, b, primary="hit@1")
    assert next(m for m in other.metrics if m.metric == "hit@1").delta == -0.5
    with pytest.raises(InputError, match="--primary facts: not a metric of both runs"):
        compare_rows(a, b, primary="facts")


def test_compare_names_the_primary_metric_and_says_p_values_are_uncorrected():
    from harness.report.compare_text import render_markdown, render_table
    a, b = _with_errors()
    c = compare_rows(a, b)
    for text in (render_table(c), render_markdown(c)):
        assert ("primary metric: passed. The p-values are per metric and not corrected across the 2 metrics: "
                "decide on passed") in text
    assert "passed *" in render_table(c) and "**passed** (primary)" in render_markdown(c)
    plain = compare_rows(A, B)  # runs without `passed`: no primary, still the warning
    assert plain.primary is None
    assert "the p-values are per metric and not corrected across the 2 metrics" in render_table(plain)


def test_flipped_cases_are_wrapped_and_capped():
    from harness.report.compare_text import render_markdown, render_table
    n = 47
    a = _run("A", [_row(f"case-{i:03d}", {"hit@1": 0.0, "facts": 1.0}) for i in range(n)])
    b = _run("B", [_row(f"case-{i:03d}", {"hit@1": 1.0, "facts": 1.0}) for i in range(n)])
    c = compare_rows(a, b)
    text = render_table(c)
    assert all(len(line) <= 100 for line in text.splitlines() if "case-" in line)
    assert "fixed (47): case-000, case-001" in text and "case-019, and 27 more (see --json)" in text
    assert "case-020" not in text
    assert "case-019, and 27 more (see --json)" in render_markdown(c)
