"""The leaderboard: Holm, the Pareto front, verdicts, selection and confirmation, and the rendered files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from harness.stats.paired import holm, paired_stats
from harness.summary import per_case_means
from harness.sweep.leaderboard import (
    CellResults,
    build_leaderboard,
    pareto_front,
    select_and_confirm,
)
from harness.sweep.leaderboard_files import (
    leaderboard_json,
    leaderboard_markdown,
    leaderboard_svg,
    leaderboard_text,
    read_leaderboard,
    write_leaderboard,
)
from pdfrag.errors import InputError

IDS = [f"case-{i:02d}" for i in range(20)]


def cell(label, values, latency=100.0, tokens=50.0):
    """A cell with the given per-case values (list in IDS order, or a dict) and a flat or per-case latency."""
    values = dict(zip(IDS, values)) if isinstance(values, list) else values
    lat = latency if isinstance(latency, dict) else {k: latency for k in values}
    return CellResults(label, values, lat, {k: tokens for k in values})


# -- Holm --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, adjusted", [
    # worked by hand: sorted 0.005, 0.01, 0.03, 0.04 -> 4x0.005=0.02, 3x0.01=0.03, 2x0.03=0.06, max(0.06, 0.04)
    ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
    ([0.5, 0.9], [1.0, 1.0]),  # 2x0.5 = 1.0 caps at 1; the next is raised to it
    ([None, 0.02, 0.04], [None, 0.04, 0.04]),  # None is not a test: m = 2
    ([0.01, 0.01], [0.02, 0.02]),
    ([0.03], [0.03]),  # one comparison: unchanged
    ([], []),
])
def test_holm_worked_examples(raw, adjusted):
    assert holm(raw) == pytest.approx(adjusted)


def test_holm_lies_between_raw_and_bonferroni_and_keeps_the_order():
    rng = np.random.default_rng(3)
    raw = list(rng.uniform(0, 0.2, size=12))
    adj = holm(raw)
    assert all(p <= a <= min(1.0, 12 * p) for p, a in zip(raw, adj))
    by_raw = [a for _, a in sorted(zip(raw, adj))]
    assert by_raw == sorted(by_raw)


# -- Pareto ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("points, front", [
    ([(0.8, 100), (0.9, 200), (0.7, 150), (0.9, 300)], [True, True, False, False]),
    ([(0.5, 100), (0.5, 100)], [True, True]),  # equal points do not dominate each other
    ([(0.5, None), (0.4, 50)], [False, True]),
    ([(0.6, 100), (0.6, 90)], [False, True]),  # as good and strictly faster
])
def test_pareto_front(points, front):
    assert pareto_front(points) == front


# -- the board ---------------------------------------------------------------------------------------------------
def test_numbers_are_compares_paired_stats_with_holm_and_verdicts():
    base = cell("base", [0.0] * 10 + [1.0] * 10, latency=200.0)
    better = cell("better", [1.0] * 20, latency=300.0)
    worse = cell("worse", [0.0] * 20, latency=100.0)
    same = cell("same", [1.0] * 10 + [0.0] * 10, latency=250.0)  # flips every case: mean equal
    board = build_leaderboard(base, [base, better, worse, same], primary="passed", seed=7, resamples=2000)
    got = board.entry("better")
    expect = paired_stats(np.array([0.0] * 10 + [1.0] * 10), np.ones(20), seed=7, resamples=2000)
    assert (got.baseline_mean, got.mean, got.delta, got.ci_low, got.ci_high, got.p_value, got.p_method) == (
        expect.mean_a, expect.mean_b, expect.delta, expect.ci_low, expect.ci_high, expect.p_value, expect.p_method)
    assert got.p_method == "exact-binomial" and got.p_value == 2 / 2**10  # 10 of 20 fixed, the others tied
    raw = [board.entry(name).p_value for name in ("better", "worse", "same")]
    assert [board.entry(name).p_holm for name in ("better", "worse", "same")] == holm(raw)
    assert {e.label: e.verdict for e in board.entries} == {"base": "baseline", "better": "better", "worse": "worse",
                                                          "same": "indistinguishable"}
    assert [e.label for e in board.entries] == ["better", "base", "same", "worse"]  # by delta
    assert {e.label for e in board.entries if e.pareto} == {"better", "worse", "base"}  # "same" loses to base
    assert board.entry("base").mean == 0.5 and board.entry("base").n == 20 and board.cases == 20


def test_a_monte_carlo_floor_prints_below_its_floor_and_so_does_its_holm_value():
    from harness.sweep.leaderboard_files import leaderboard_text
    base = cell("base", [0.1] * 30)
    far = [cell(f"far-{i}", [0.5 + j / 100 for j in range(30)]) for i in range(3)]  # 30 unequal gains: Monte-Carlo
    board = build_leaderboard(base, far, primary="facts")
    entry = board.entry("far-0")
    assert (entry.p_method, entry.p_value, entry.p_holm) == ("monte-carlo", pytest.approx(1 / 10_001),
                                                             pytest.approx(3 / 10_001))
    line = next(x for x in leaderboard_text(board, None).splitlines() if x.lstrip().startswith("far-0"))
    assert "< 1e-4" in line and "< 0.0003" in line and "0.000 " not in line


def test_holm_can_turn_a_nominal_win_into_indistinguishable():
    base = cell("base", [0.0] * 20)
    small = cell("small", [1.0] * 5 + [0.0] * 15)  # 5 of 20 fixed: nominal p about 0.06 or less
    flat = [cell(f"flat-{i}", [0.0] * 20) for i in range(4)]
    alone = build_leaderboard(base, [small], primary="passed", alpha=0.1, resamples=5000).entry("small")
    crowded = build_leaderboard(base, [small, *flat], primary="passed", alpha=0.1, resamples=5000).entry("small")
    assert alone.p_value == crowded.p_value < 0.1
    assert alone.verdict == "better"
    assert crowded.p_holm == pytest.approx(min(1.0, 5 * crowded.p_value))
    assert crowded.verdict == "indistinguishable"


def test_nulls_are_unpaired_and_an_empty_cell_is_not_a_comparison():
    values = [1.0] * 20
    base = cell("base", values)
    partial = cell("partial", [None] * 5 + [1.0] * 15)
    empty = cell("empty", [None] * 20)
    board = build_leaderboard(base, [partial, empty], primary="facts", resamples=500)
    assert board.entry("partial").n == 15
    assert (board.entry("empty").n, board.entry("empty").verdict, board.entry("empty").p_holm) == (
        0, "no shared cases", None)
    assert board.entry("partial").p_holm == board.entry("partial").p_value  # the empty cell is not counted in m
    assert board.entries[-1].label == "empty"


def test_latency_percentiles_and_tokens():
    latency = {k: float(100 * (i + 1)) for i, k in enumerate(IDS[:10])}  # 100 .. 1000 ms
    c = CellResults("c", dict.fromkeys(IDS[:10], 1.0), latency, {k: 10.0 * (i + 1) for i, k in enumerate(IDS[:10])})
    entry = build_leaderboard(c, [], primary="passed", resamples=100).entry("c")
    # numpy linear interpolation over 100..1000: p50 at position 4.5 -> 550, p90 at 8.1 -> 910
    assert (entry.latency_p50_ms, entry.latency_p90_ms) == pytest.approx((550.0, 910.0))
    assert (entry.tokens_mean, entry.tokens_total) == pytest.approx((55.0, 550.0))


def test_lower_is_better_flips_the_verdict():
    base = cell("base", [1.0] * 20)
    lower = cell("lower", [0.0] * 20)
    board = build_leaderboard(base, [lower], primary="errors", higher_is_better=False, resamples=1000)
    assert board.entry("lower").verdict == "better" and board.entries[0].label == "lower"


def test_case_subset_and_bad_alpha():
    base = cell("base", [0.0] * 20)
    other = cell("other", [1.0] * 10 + [0.0] * 10)
    board = build_leaderboard(base, [other], primary="passed", cases=IDS[10:], tag="heldout", resamples=500)
    assert (board.entry("other").n, board.entry("other").delta, board.tag, board.cases) == (10, 0.0, "heldout", 10)
    with pytest.raises(InputError, match="alpha"):
        build_leaderboard(base, [other], primary="passed", alpha=0.0)


# -- selection ---------------------------------------------------------------------------------------------------
def tags(dev: int):
    return {k: ("dev",) if i < dev else ("heldout",) for i, k in enumerate(IDS)}


def test_select_on_dev_then_confirm_on_heldout():
    base = cell("base", [0.0] * 20)
    lucky = cell("lucky", [1.0] * 10 + [0.0] * 10)  # great on dev, nothing on heldout
    steady = cell("steady", [1.0] * 6 + [0.0] * 4 + [0.0] * 10)
    result = select_and_confirm(base, [base, steady, lucky], tags(10), select_on="dev", confirm_on="heldout",
                                primary="passed", resamples=2000)
    assert result.selected == "lucky"
    assert result.select.entry("lucky").n == 10 and result.select.tag == "dev"
    confirmed = result.confirm.entry("lucky")
    assert (confirmed.n, confirmed.delta, confirmed.verdict) == (10, 0.0, "indistinguishable")
    assert [e.label for e in result.confirm.entries] == ["base", "lucky"]
    assert result.to_dict()["confirm"]["tag"] == "heldout"


def test_selection_ties_go_to_the_faster_cell():
    base = cell("base", [0.0] * 20)
    slow = cell("slow", [1.0] * 20, latency=500.0)
    fast = cell("fast", [1.0] * 20, latency=200.0)
    result = select_and_confirm(base, [slow, fast], tags(10), select_on="dev", confirm_on="heldout",
                                primary="passed", resamples=200)
    assert result.selected == "fast"


def test_selection_refuses_shared_or_missing_tags():
    base, other = cell("base", [0.0] * 20), cell("other", [1.0] * 20)
    both = {k: ("dev", "heldout") for k in IDS[:2]} | {k: ("dev",) for k in IDS[2:]}
    with pytest.raises(InputError, match=r"2 case\(s\) carry both 'dev' and 'heldout'"):
        select_and_confirm(base, [other], both, select_on="dev", confirm_on="heldout", primary="passed")
    with pytest.raises(InputError, match="no case carries the tag 'heldout'"):
        select_and_confirm(base, [other], {k: ("dev",) for k in IDS}, select_on="dev", confirm_on="heldout",
                           primary="passed")


# -- rendering ---------------------------------------------------------------------------------------------------
def sample_board():
    base = cell("chunk-size=600,top-k=2", [0.0] * 10 + [1.0] * 10, latency=200.0)
    odd = cell("prompt=<a & b>|x.txt", [1.0] * 20, latency=300.0)
    slow = cell("top-k=8", [0.0] * 20, latency=900.0)
    return build_leaderboard(base, [odd, slow], primary="passed", resamples=500)


def test_svg_is_well_formed_escaped_and_marks_the_front(tmp_path):
    board = sample_board()
    svg = leaderboard_svg(board)
    root = ET.fromstring(svg)  # raises on anything unescaped
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "prompt=<a & b>|x.txt" in texts
    marks = [el for el in root.iter() if el.get("class", "").startswith("cell")]
    assert len(marks) == 3
    assert sum("front" in el.get("class") for el in marks) == sum(e.pareto for e in board.entries) == 2
    assert len([el for el in root.iter() if el.get("class") == "interval"]) == 3
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 1


def _apart_labels(root: ET.Element) -> list[tuple[float, float, int]]:
    """The chart's point labels as (x, baseline, characters), checked pairwise not to overlap (7 px a character,
    14 px a line)."""
    labels = [(float(t.get("x")), float(t.get("y")), len(t.text)) for t in root.iter("{http://www.w3.org/2000/svg}text")
              if t.get("class") == "label"]
    for i, (x1, y1, n1) in enumerate(labels):
        for x2, y2, n2 in labels[i + 1:]:
            assert x1 + 7 * n1 <= x2 or x2 + 7 * n2 <= x1 or abs(y1 - y2) >= 14
    return labels


def test_point_labels_do_not_overlap_when_cells_coincide():
    """Issue #20 item 20: four cells with the same mean and latency (and two more close by) get labels that do
    not overlap; a lone cell's label stays beside its point, with no leader line."""
    values = [0.0] * 10 + [1.0] * 10
    same = [cell(f"top-k={k},chunk-size=600", values, latency=300.0) for k in (2, 4, 6, 8)]
    near = [cell("top-k=3", values, latency=305.0), cell("top-k=5", values[1:] + [1.0], latency=310.0)]
    alone = cell("prompt=short.txt", [1.0] * 20, latency=900.0)
    board = build_leaderboard(cell("baseline", values, latency=100.0), [*same, *near, alone], primary="passed",
                              resamples=200)
    root = ET.fromstring(leaderboard_svg(board))
    labels = _apart_labels(root)
    assert len(labels) == 8
    leaders = [el for el in root.iter() if el.get("class") == "leader"]
    assert 3 <= len(leaders) < 8  # the stacked labels point back; the lone cell and the baseline do not need to


def test_labels_of_cells_at_the_bottom_stay_inside_the_chart():
    """Six cells scoring 0 at about the same latency: their labels neither overlap nor leave the plot area (the
    reviewer's case: pushed down one line each, the last ones fell below the chart)."""
    from harness.sweep.leaderboard_files import _BOTTOM, _H
    cells = [cell(f"cell-{i}", [0.0] * 20, latency=300.0 + i) for i in range(6)]
    board = build_leaderboard(cell("baseline", [1.0] * 20, latency=100.0), cells, primary="passed", resamples=200)
    labels = _apart_labels(ET.fromstring(leaderboard_svg(board)))
    assert len(labels) == 7 and all(y <= _H - _BOTTOM - 4 for _, y, _ in labels)


def test_markdown_text_and_json(tmp_path):
    board = sample_board()
    md = leaderboard_markdown(board, chart="leaderboard.svg")
    assert "| prompt=\\<a \\& b\\>\\|x.txt | 20 | 0 | 1.000 | +0.500 |" in md
    assert md.count("\n| ") == 2 + len(board.entries)  # header, rule, one row per entry
    text = leaderboard_text(board)
    assert len(text.splitlines()) == 3 + len(board.entries)
    assert "chunk-size=600,top-k=2 (baseline)" in text
    data = json.loads(leaderboard_json(board))
    assert data["leaderboard"]["entries"][0]["label"] == "prompt=<a & b>|x.txt"
    assert leaderboard_json(board) == leaderboard_json(sample_board())  # deterministic bytes
    files = write_leaderboard(tmp_path / "sweep", board)
    assert sorted(p.name for p in files.values()) == ["leaderboard.json", "leaderboard.md", "leaderboard.svg"]
    assert files["json"].read_text(encoding="utf-8") == leaderboard_json(board)


def test_the_baseline_is_a_candidate_and_nothing_is_confirmed_when_no_cell_beats_it(tmp_path):
    # Every cell lost to the baseline on dev: the "best loser" is not selected, and nothing is confirmed.
    base = cell("base", [1.0] * 20)
    close = cell("close", [1.0] * 9 + [0.0] + [1.0] * 10)
    far = cell("far", [0.0] * 20)
    result = select_and_confirm(base, [base, close, far], tags(10), select_on="dev", confirm_on="heldout",
                                primary="passed", resamples=200)
    assert (result.selected, result.confirm, result.baseline_kept) == ("base", None, True)
    text = leaderboard_text(result.select, result)
    assert ("no cell beats the baseline base on cases tagged 'dev' (closest: close, delta -0.100); the baseline "
            "stays and nothing is confirmed on 'heldout'") in text
    assert "against the baseline: delta" not in text
    files = write_leaderboard(tmp_path, result.select, result)
    assert read_leaderboard(files["json"])[1].baseline_kept
    tie = select_and_confirm(base, [base, cell("same", [1.0] * 20)], tags(10), select_on="dev",
                             confirm_on="heldout", primary="passed", resamples=200)
    assert tie.baseline_kept  # equal is not better


def test_errored_cases_are_counted_per_entry():
    base = CellResults("base", dict.fromkeys(IDS, 1.0), errored=frozenset())
    broken = CellResults("broken", {k: 0.0 if i < 5 else 1.0 for i, k in enumerate(IDS)},
                         errored=frozenset(IDS[:5]))
    board = build_leaderboard(base, [broken], primary="passed", resamples=200)
    assert (board.entry("broken").errored, board.entry("base").errored) == (5, 0)
    assert "an errored case counts 0 on passed (column errored)" in leaderboard_text(board)
    assert build_leaderboard(base, [broken], primary="passed", resamples=200,
                             cases=IDS[3:]).entry("broken").errored == 2


def test_selection_is_rendered():
    base = cell("base", [0.0] * 20)
    lucky = cell("lucky", [1.0] * 10 + [0.0] * 10)
    result = select_and_confirm(base, [lucky], tags(10), select_on="dev", confirm_on="heldout", primary="passed",
                                resamples=500)
    md = leaderboard_markdown(result.select, result)
    assert "## Selection" in md and "selected on 'dev': lucky" in md
    assert "confirmed on 'heldout' against the baseline: delta +0.000" in md
    assert json.loads(leaderboard_json(result.select, result))["selection"]["selected"] == "lucky"


def test_per_case_means_average_repeats_and_keep_nulls():
    rows = [("a", 1.0), ("b", None), ("a", 0.0), ("c", 1.0), ("b", None), ("c", None), ("a", 1.0)]
    assert per_case_means(rows) == {"a": pytest.approx(2 / 3), "b": None, "c": 1.0}
    assert list(per_case_means(rows)) == ["a", "b", "c"]


@pytest.mark.parametrize("bad, message", [
    (CellResults("base", {"a": 1.0}), r"two cells are labelled 'base'"),
    (CellResults("x", {"a": float("nan")}), r"cell 'x', case 'a': the value nan is not a finite number"),
    (CellResults("x", {"a": 1.0}, {"a": float("inf")}), r"the latency inf is not a finite number"),
])
def test_inputs_that_would_spoil_the_numbers_are_refused(bad, message):
    with pytest.raises(InputError, match=message):
        build_leaderboard(CellResults("base", {"a": 0.0}), [bad], primary="passed", resamples=10)


def test_no_tokens_reported_is_null_not_zero():
    entry = build_leaderboard(CellResults("base", {"a": 1.0}, {"a": 5.0}), [], primary="passed",
                              resamples=10).entry("base")
    assert (entry.tokens_mean, entry.tokens_total, entry.latency_p50_ms) == (None, None, 5.0)


def test_leaderboard_json_reads_back_into_the_same_records(tmp_path):
    base = cell("base", [0.0] * 20)
    lucky = cell("lucky", [1.0] * 10 + [0.0] * 10)
    result = select_and_confirm(base, [lucky], tags(10), select_on="dev", confirm_on="heldout", primary="passed",
                                resamples=200)
    files = write_leaderboard(tmp_path, result.select, result)
    assert read_leaderboard(files["json"]) == (result.select, result)
    files["json"].write_text('{"format": 1, "leaderboard": {"primary": "passed"}}', encoding="utf-8")
    with pytest.raises(InputError, match="leaderboard.json: not a readable leaderboard"):
        read_leaderboard(files["json"])
