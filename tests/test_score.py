"""Offline scoring of saved outputs: the five checks, rows, aggregation, the workshop sample and `rag-eval score`."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import fields
from pathlib import Path

import pytest

from harness.chart import svg_bars, text_bars
from harness.cli import main
from harness.lexical import LexicalIndex, rank, tokenize
from harness.saved import SavedCase, SavedClaim, load_saved
from harness.score import (
    SCORE_CHECKS,
    ScoreRow,
    ScoreSummary,
    abstention_correctness,
    citation_precision,
    claim_support,
    key_point_coverage,
    point_found,
    retrieval_recall,
    score_case,
    score_saved,
    summarize,
)

WORKSHOP = Path(__file__).resolve().parents[1] / "sample_docs" / "workshop"
CASES = WORKSHOP / "cases.csv"

# The numbers the issue asks for (with --na-as-pass), worked out by hand from sample_docs/workshop/README.md:
# citation 8/10 (W05, W08 cite a wrong chunk), claims 7.5/10 (W04 0.5, W06 0, W08 0), points 8.5/10 with the
# three unanswerable cases counted 1.0 (W03 0.5, W06 0), abstention 9/10 (W08).
WITH_NA_AS_PASS = {
    "cases": "10", "passes": "5", "retrieval recall": "1.000", "citation precision": "0.800",
    "claim support": "0.750", "key-point coverage": "0.850", "abstention": "0.900",
}
# Without it the three n/a cases leave the means: points 5.5/7 = 0.786; recall 7/7; the others have no n/a.
WITHOUT = {**WITH_NA_AS_PASS, "key-point coverage": "0.786"}


# ---------------------------------------------------------------- the five checks, one table each


@pytest.mark.parametrize("expected, retrieved, value", [
    ((), ("P1",), None),                      # nothing expected: not applicable
    ((), (), None),
    (("P1",), ("P1", "P2"), 1.0),
    (("P1", "P2"), ("P2", "P9"), 0.5),
    (("P1",), (), 0.0),                       # nothing retrieved
    (("P1", "P1", "P2"), ("P1",), 0.5),       # duplicates in the labels count once
])
def test_retrieval_recall(expected, retrieved, value):
    assert retrieval_recall(expected, retrieved) == value


@pytest.mark.parametrize("cited, retrieved, expected, should_abstain, value", [
    ((), ("P1",), (), True, 1.0),             # no citation, should abstain: right
    ((), ("P1",), ("P1",), False, 0.0),       # no citation, should answer: wrong
    (("P1",), ("P1",), ("P1",), False, 1.0),
    (("P2",), ("P1", "P2"), ("P1",), False, 0.0),   # retrieved but not expected (wrong policy)
    (("P1",), ("P2",), ("P1",), False, 0.0),        # expected but not retrieved (cited from nowhere)
    (("P1", "P2"), ("P1", "P2"), ("P1",), False, 0.5),
    (("P1", "P1", "P2"), ("P1", "P2"), ("P1",), False, 0.5),  # a chunk cited twice counts once
    (("P1",), ("P1",), (), True, 0.0),        # should abstain, but cites a chunk
])
def test_citation_precision(cited, retrieved, expected, should_abstain, value):
    assert citation_precision(cited, retrieved, expected, should_abstain=should_abstain) == value


@pytest.mark.parametrize("supported, abstains, value", [
    ((), True, 1.0),                          # no claim, abstained: nothing was claimed
    ((), False, 0.0),                         # no claim, answered: missing review never passes
    ((True,), False, 1.0),
    ((True, False), False, 0.5),
    ((False,), False, 0.0),
    ((True, False, False, True), True, 0.5),  # annotated claims are scored even when it abstained
])
def test_claim_support(supported, abstains, value):
    assert claim_support(supported, candidate_abstains=abstains) == value


@pytest.mark.parametrize("answer, points, value", [
    ("anything", (), None),                                       # nothing required: not applicable
    ("Requests five calendar days ahead.", (("five calendar days",),), 1.0),
    ("REQUESTS FIVE   CALENDAR\nDAYS ahead", (("five calendar days",),), 1.0),   # case and whitespace
    ("Up to 150 minutes late.", (("15 minutes",),), 0.0),             # word boundaries: 15 is not 150
    ("Up to 150 minutes late.", (("15",),), 0.0),
    ("Up to 15 minutes late.", (("15",),), 1.0),
    ("Reply in 2 working days.", (("two working days", "2 working days"),), 1.0),  # an accepted alternative
    ("Five calendar days.", (("five calendar days",), ("two working days",)), 0.5),
    ("the facilitator’s discretion", (("facilitator's discretion",),), 1.0),  # curly quote normalised
    ("at least 80% of sessions", (("80%",),), 1.0),
    ("nothing relevant", (("seven days",), ("refund",)), 0.0),
])
def test_key_point_coverage(answer, points, value):
    assert key_point_coverage(answer, points) == value


def test_point_found_ignores_empty_alternatives():
    assert not point_found("anything at all", ["", "   "])


@pytest.mark.parametrize("should, observed, value", [
    (True, True, 1.0), (False, False, 1.0), (True, False, 0.0), (False, True, 0.0),
])
def test_abstention_correctness(should, observed, value):
    assert abstention_correctness(should, observed) == value


# ---------------------------------------------------------------- rows and aggregation


def _case(**overrides) -> SavedCase:
    base = dict(case_id="C1", question="q?", expected_chunk_ids=("P1",), required_points=(("48 hours",),),
                candidate_answer="Closes 48 hours before.", cited_chunk_ids=("P1",), should_abstain=False,
                candidate_abstains=False, retrieved_chunk_ids=("P1", "P2"))
    return SavedCase(**{**base, **overrides})


def test_registry_names_are_the_row_fields():
    row_fields = [f.name for f in fields(ScoreRow)]
    assert [c.name for c in SCORE_CHECKS] == row_fields[1:6]
    assert len({c.label for c in SCORE_CHECKS}) == 5


def test_row_passes_with_not_applicable_checks_and_round_trips():
    case = _case(expected_chunk_ids=(), required_points=(), candidate_answer="Not covered.", cited_chunk_ids=(),
                 should_abstain=True, candidate_abstains=True)
    row = score_case(case, [], ("P1", "P2"))
    assert (row.retrieval_recall, row.key_point_coverage) == (None, None)
    assert row.pass_all and row.failures == ()
    assert ScoreRow.from_json(json.loads(json.dumps(row.to_json()))) == row


@pytest.mark.parametrize("overrides, claims, reasons", [
    ({}, [SavedClaim("C1", "ok", ("P1",))], []),
    ({"cited_chunk_ids": ("P2",)}, [SavedClaim("C1", "ok", ("P1",))], ["cited chunk P2 not expected"]),
    ({"cited_chunk_ids": ("P3",), "expected_chunk_ids": ("P3",)}, [SavedClaim("C1", "ok", ("P1",))],
     ["expected chunk P3 not retrieved", "cited chunk P3 not retrieved"]),
    ({"cited_chunk_ids": ()}, [SavedClaim("C1", "ok", ("P1",))], ["no chunk cited"]),
    ({}, [], ["answered, but no claim is annotated"]),
    ({}, [SavedClaim("C1", "Also free coffee.", ())], ["claim 'Also free coffee.' unsupported"]),
    ({"required_points": (("two working days", "2 working days"),)}, [SavedClaim("C1", "ok", ("P1",))],
     ["required point 'two working days' missing"]),
    ({"should_abstain": True, "expected_chunk_ids": (), "required_points": ()}, [SavedClaim("C1", "ok", ("P1",))],
     ["cited chunk P1 not expected", "answered although it should abstain"]),
    ({"candidate_abstains": True}, [SavedClaim("C1", "ok", ("P1",))], ["abstained although it should answer"]),
])
def test_row_failure_reasons(overrides, claims, reasons):
    row = score_case(_case(**overrides), claims, ("P1", "P2"))
    assert list(row.failures) == reasons
    assert row.pass_all == (not reasons)


def test_summary_counts_and_na_as_pass():
    rows = [
        score_case(_case(case_id="A"), [SavedClaim("A", "ok", ("P1",))], ("P1",)),          # all 1.0
        score_case(_case(case_id="B", expected_chunk_ids=(), required_points=(), cited_chunk_ids=(),
                         should_abstain=True, candidate_abstains=True), [], ("P1",)),        # recall, points n/a
        score_case(_case(case_id="C", candidate_answer="no idea"), [SavedClaim("C", "x", ())], ("P1",)),
    ]
    plain, lenient = summarize(rows), summarize(rows, na_as_pass=True)
    recall, points = plain.check("retrieval_recall"), plain.check("key_point_coverage")
    assert (recall.mean, recall.scored, recall.not_applicable) == (1.0, 2, 1)
    assert (points.mean, points.scored, points.not_applicable) == (0.5, 2, 1)
    assert lenient.check("key_point_coverage").mean == pytest.approx(2 / 3)
    assert plain.passes == lenient.passes == 2


def test_all_not_applicable_has_no_mean_unless_na_as_pass():
    row = score_case(_case(expected_chunk_ids=(), required_points=(), cited_chunk_ids=(), should_abstain=True,
                           candidate_abstains=True), [], ())
    assert summarize([row]).check("retrieval_recall").mean is None
    assert summarize([row], na_as_pass=True).check("retrieval_recall").mean == 1.0


# ---------------------------------------------------------------- the workshop sample


def _printed(out: str) -> dict[str, str]:
    """The summary block: `label value` lines, optionally followed by two spaces and the counts."""
    labels = "|".join(re.escape(label) for label in ["cases", "passes", *(c.label for c in SCORE_CHECKS)])
    return dict(re.findall(rf"^({labels}) (\d+|\d\.\d{{3}}|n/a)(?:  \(.*\))?$", out, flags=re.MULTILINE))


@pytest.mark.parametrize("flags, expected", [(["--na-as-pass"], WITH_NA_AS_PASS), ([], WITHOUT)])
def test_workshop_table_through_the_cli(capsys, flags, expected):
    assert main(["score", "--cases", str(CASES), *flags]) == 0  # failing cases are a report, not an error
    out = capsys.readouterr().out
    assert _printed(out) == expected
    assert "failed cases: 5 of 10" in out


@pytest.mark.parametrize("na_as_pass, expected", [(True, WITH_NA_AS_PASS), (False, WITHOUT)])
def test_workshop_numbers_through_the_library(na_as_pass, expected):
    result = score_saved(CASES, na_as_pass=na_as_pass)
    summary = result.summary
    got = {"cases": str(summary.cases), "passes": str(summary.passes)}
    got.update({c.label: f"{summary.check(c.name).mean:.3f}" for c in SCORE_CHECKS})
    assert got == expected
    counts = {c.name: (c.scored, c.not_applicable) for c in summary.checks}
    assert counts["retrieval_recall"] == counts["key_point_coverage"] == (7, 3)
    assert [r.case_id for r in result.failed] == ["W03", "W04", "W05", "W06", "W08"]


def test_workshop_deliberate_failures_are_the_documented_ones():
    rows = {r.case_id: r for r in score_saved(CASES).rows}
    assert rows["W03"].failures == ("required point 'two working days' missing",)
    assert rows["W04"].claim_support == 0.5 and "unsupported" in rows["W04"].failures[0]
    assert rows["W05"].failures == ("cited chunk P1 not expected",) and "P5" in rows["W05"].retrieved_chunk_ids
    assert rows["W06"].failures[-1] == "required point 'seven days' missing"
    assert rows["W08"].failures[-1] == "answered although it should abstain"


def test_workshop_lexical_retriever_finds_the_expected_chunks():
    result = score_saved(CASES)
    lexical = {r.case_id: r.retrieved_chunk_ids for r in result.rows if r.retrieved_by == "lexical"}
    assert set(lexical) == {"W01", "W07", "W09"} == set(result.summary.lexical_case_ids)
    assert lexical["W01"][0] == "P1" and lexical["W07"][0] == "P7"
    assert all(len(ids) == 2 for ids in lexical.values())
    assert {r.case_id: len(r.retrieved_chunk_ids) for r in score_saved(CASES, k=3).rows}["W01"] == 3


def test_workshop_json_and_out_dir(capsys, tmp_path):
    out_dir = tmp_path / "out"
    assert main(["score", "--cases", str(CASES), "--na-as-pass", "--json", "--out", str(out_dir)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((out_dir / "score_summary.json").read_text())
    assert ScoreSummary.from_json(printed) == score_saved(CASES, na_as_pass=True).summary
    assert printed["checks"]["claim_support"] == {"mean": 0.75, "scored": 10, "not_applicable": 0}
    assert printed["settings"] == {"na_as_pass": True, "k": 2, "retrieved_by_lexical_retriever": ["W01", "W07", "W09"]}
    assert [f["role"] for f in printed["inputs"]] == ["cases", "chunks", "claims"]
    rows = [json.loads(line) for line in (out_dir / "score_rows.jsonl").read_text().splitlines()]
    assert len(rows) == 10 and sum(r["pass_all"] for r in rows) == 5
    svg = ET.fromstring((out_dir / "score_chart.svg").read_text())
    assert len([e for e in svg.iter() if e.get("class") == "bar"]) == len(SCORE_CHECKS)


def test_unwritable_out_dir_is_bad_usage(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["score", "--cases", str(CASES), "--out", str(blocker / "out")]) == 2
    assert "cannot write there" in capsys.readouterr().err


def test_jsonl_layout_gives_the_same_numbers(tmp_path):
    saved = load_saved(CASES)
    for name, records in (("cases", saved.cases), ("chunks", saved.chunks), ("claims", saved.claims)):
        text = "".join(json.dumps(r.to_json()) + "\n" for r in records)
        (tmp_path / f"{name}.jsonl").write_text(text, encoding="utf-8")
    for na_as_pass in (True, False):
        from_csv = score_saved(CASES, na_as_pass=na_as_pass)
        from_jsonl = score_saved(tmp_path / "cases.jsonl", na_as_pass=na_as_pass)
        assert from_jsonl.rows == from_csv.rows
        assert from_jsonl.summary.checks == from_csv.summary.checks
        assert [f.layout for f in from_jsonl.summary.inputs] == ["jsonl"] * 3


# ---------------------------------------------------------------- lexical retriever and charts


def test_lexical_ties_keep_text_order_and_results_repeat():
    texts = ["late entry rules", "a dog", "late entry rules", ""]
    index = LexicalIndex(texts)
    first = index.search("late entry", 4)
    assert [i for i, _ in first] == [0, 2, 1, 3] and first[0][1] == first[1][1] > 0
    assert index.search("late entry", 4) == first == LexicalIndex(texts).search("late entry", 4)
    assert index.search("zebra", 2) == [(0, 0.0), (1, 0.0)]  # no match still fills top-k, in text order
    assert rank("dog", texts, 10) == [1, 0, 2, 3]
    assert LexicalIndex([]).search("x", 3) == [] and LexicalIndex(["", " "]).search("x", 1) == [(0, 0.0)]


def test_tokenize_normalises_and_lowercases():
    assert tokenize("Re-\nimbursement ﬁles, “Quoted”") == ["reimbursement", "files", "quoted"]


def test_charts_have_one_bar_per_check_and_mark_not_applicable():
    bars = [("retrieval recall", 1.0), ("key-point coverage", None), ("abstention", 0.5)]
    lines = text_bars(bars, width=10).splitlines()
    assert lines[0].endswith("|##########|  1.000") and lines[1].endswith("|          |  n/a")
    assert "|#####     |" in lines[2]
    svg = ET.fromstring(svg_bars(bars, title="a < b"))
    assert len([e for e in svg.iter() if e.get("class") == "bar"]) == 2
