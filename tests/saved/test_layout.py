"""Loading saved outputs: both layouts, their conventions, and rejection of bad files with file, line and field."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.saved import to_run
from harness.saved.layout import (
    SavedCase,
    SavedChunk,
    SavedClaim,
    SavedStream,
    claims_follow_cases,
    load_saved,
    resolve_paths,
)
from harness.saved.to_run import score_saved, score_to_run
from pdfrag.errors import InputError

WORKSHOP = Path(__file__).resolve().parents[2] / "sample_docs" / "workshop"
CASE_HEADER = ["case_id", "question", "expected_chunk_ids", "required_points", "candidate_answer",
               "cited_chunk_ids", "should_abstain", "candidate_abstains", "retrieved_chunk_ids"]


@pytest.fixture
def workshop(tmp_path) -> Path:
    """A writable copy of the workshop sample; returns the folder."""
    folder = tmp_path / "workshop"
    shutil.copytree(WORKSHOP, folder)
    return folder


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _write(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def _drop_column(path: Path, name: str) -> None:
    rows = _rows(path)
    at = rows[0].index(name)
    _write(path, [r[:at] + r[at + 1:] for r in rows])


def _set_cell(path: Path, case_id: str, column: str, value: str) -> None:
    rows = _rows(path)
    at = rows[0].index(column)
    for row in rows:
        if row[0] == case_id:
            row[at] = value
    _write(path, rows)


def _append(path: Path, row: list[str]) -> None:
    _write(path, _rows(path) + [row])


def _load_error(cases: Path) -> str:
    with pytest.raises(InputError) as caught:
        load_saved(cases)
    return str(caught.value)


# Each bad file must be rejected with `file:line: field:`. Workshop lines: header 1, W01 on 2 ... W10 on 11.
BAD_CSV = [
    ("missing column", lambda d: _drop_column(d / "cases.csv", "candidate_abstains"),
     "cases.csv", 1, "candidate_abstains", "missing column"),
    ("bad boolean", lambda d: _set_cell(d / "cases.csv", "W03", "should_abstain", "maybe"),
     "cases.csv", 4, "should_abstain", "'maybe' is not a boolean"),
    ("duplicate case id", lambda d: _append(d / "cases.csv", _rows(d / "cases.csv")[2]),
     "cases.csv", 12, "case_id", "duplicate case id 'W02' (first on line 3)"),
    ("claim for an unknown case", lambda d: _append(d / "claims.csv", ["W99", "Parking is free.", ""]),
     "claims.csv", 12, "case_id", "unknown case 'W99'"),
]


@pytest.mark.parametrize("break_it, file, line, field, problem", [b[1:] for b in BAD_CSV], ids=[b[0] for b in BAD_CSV])
def test_bad_csv_is_rejected_with_file_line_and_field(workshop, capsys, break_it, file, line, field, problem):
    break_it(workshop)
    expected = f"{workshop / file}:{line}: {field}: {problem}"
    assert expected in _load_error(workshop / "cases.csv")
    assert main(["score", "--cases", str(workshop / "cases.csv")]) == 2
    captured = capsys.readouterr()
    assert expected in captured.err and captured.out == ""


def test_every_problem_is_reported_at_once(workshop):
    _set_cell(workshop / "cases.csv", "W03", "should_abstain", "maybe")
    _set_cell(workshop / "cases.csv", "W04", "expected_chunk_ids", "P4|P42")
    _append(workshop / "cases.csv", _rows(workshop / "cases.csv")[2])
    _append(workshop / "claims.csv", ["W99", "Parking is free.", "P0"])
    message = _load_error(workshop / "cases.csv")
    assert message.startswith("5 problems in the saved outputs:")
    for expected in ("cases.csv:4: should_abstain:", "cases.csv:5: expected_chunk_ids: unknown chunk id 'P42'",
                     "cases.csv:12: case_id: duplicate", "claims.csv:12: case_id: unknown case 'W99'",
                     "claims.csv:12: support_chunk_ids: unknown chunk id 'P0'"):
        assert expected in message


def test_citing_an_unknown_chunk_is_a_result_not_a_broken_file(workshop):
    # A system that cites what it never retrieved has failed citation precision; the file is still valid.
    _set_cell(workshop / "cases.csv", "W04", "cited_chunk_ids", "P42")
    row = next(r for r in score_saved(workshop / "cases.csv").rows if r.case_id == "W04")
    assert row.metrics["citation_precision"] == 0.0
    # one reason per fact about the citation, not two wordings of "not retrieved" (issue 40)
    assert "citation: cited 'P42' was not among the retrieved passages" in row.failure_reasons
    assert "cited P42, not expected" in row.failure_reasons
    assert not any(reason.startswith("cited P42, not retrieved") for reason in row.failure_reasons)


def test_a_broken_header_does_not_flood_the_other_files_with_unknown_references(workshop):
    _drop_column(workshop / "cases.csv", "case_id")
    message = _load_error(workshop / "cases.csv")
    assert message.startswith("1 problem in the saved outputs:") and "cases.csv:1: case_id: missing column" in message


@pytest.mark.parametrize("column, value, problem", [
    ("expected_chunk_ids", "P1||P2", "empty item in 'P1||P2'"),
    ("required_points", "a;;b", "empty alternative in 'a;;b'"),
    ("retrieved_chunk_ids", "P1|P77", "unknown chunk id 'P77'"),
    ("case_id", "  ", "empty"),
    ("question", "", "empty"),
    ("candidate_abstains", "", "'' is not a boolean"),
])
def test_bad_cells(workshop, column, value, problem):
    _set_cell(workshop / "cases.csv", "W02", column, value)
    assert f"cases.csv:3: {column}: {problem}" in _load_error(workshop / "cases.csv")


def test_bad_chunks_and_rows(workshop):
    _append(workshop / "chunks.csv", ["P1", "again", "Duplicate id."])
    _append(workshop / "cases.csv", ["W11", "q", "", "", "", "", "no", "no", "P1", "one cell too many"])
    message = _load_error(workshop / "cases.csv")
    assert "chunks.csv:10: chunk_id: duplicate chunk id 'P1' (first on line 2)" in message
    assert "cases.csv:12: (row): 10 cells but the header has 9" in message


@pytest.mark.parametrize("text, value", [("true", True), ("YES", True), (" 1 ", True), ("False", False),
                                         ("no", False), ("0", False)])
def test_booleans(workshop, text, value):
    _set_cell(workshop / "cases.csv", "W10", "should_abstain", text)
    case = load_saved(workshop / "cases.csv").cases[-1]
    assert case.should_abstain is value


def test_lists_points_and_unsaved_retrieval():
    saved = load_saved(WORKSHOP / "cases.csv")
    w01, w02, w09 = saved.cases[0], saved.cases[1], saved.cases[8]
    assert w02.retrieved_chunk_ids == ("P2", "P1") and w01.retrieved_chunk_ids is None
    assert w02.required_points == (("72 hours", "three days"), ("full account credit",))
    assert w09.expected_chunk_ids == () and w09.cited_chunk_ids == () and saved.claims_by_case().get("W09", ()) == ()
    assert [c.supported for c in saved.claims_by_case()["W04"]] == [True, False]
    assert saved.chunks[3] == SavedChunk(chunk_id="P4", text=saved.chunks[3].text, topic="late entry")


def test_line_numbers_count_quoted_line_breaks_and_bom(tmp_path):
    rows = [CASE_HEADER,
            ["A", "a question\nover two lines", "", "", "", "", "yes", "yes", "X"],
            ["B", "q", "", "", "", "", "yes", "perhaps", "X"]]
    path = tmp_path / "cases.csv"
    _write(path, rows)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # spreadsheet exports often start with a BOM
    assert f"{path}:4: candidate_abstains:" in _load_error(path)


def test_defaults_beside_the_cases_file_and_explicit_paths(workshop, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (workshop / "chunks.csv").rename(elsewhere / "policies.csv")
    message = _load_error(workshop / "cases.csv")  # no chunks file: unsaved retrievals cannot be filled
    assert "cases.csv:2: retrieved_chunk_ids: empty, and no chunks file" in message
    saved = load_saved(workshop / "cases.csv", elsewhere / "policies.csv")
    assert [f.role for f in saved.files] == ["cases", "chunks", "claims"]
    (workshop / "claims.csv").unlink()
    result = score_saved(workshop / "cases.csv", elsewhere / "policies.csv")
    # Since #10 a run without a claims file is not reviewed at all: claim support is n/a for every case (it used
    # to be 0.0 for answers, 1.0 for abstentions), and a warning says how to score it.
    assert [r.metrics["claim_support"] for r in result.rows] == [None] * 10
    assert {r.human_claim_review for r in result.rows} == {"pending"}
    assert any("no claims file" in w and "--claims" in w for w in result.warnings)


@pytest.mark.parametrize("name", ["missing.csv", "cases.txt"])
def test_missing_file_or_unknown_extension(tmp_path, capsys, name):
    path = tmp_path / name
    if name.endswith(".txt"):
        path.write_text("case_id\n")
    with pytest.raises(InputError, match=name.replace(".", r"\.")):
        load_saved(path)
    assert main(["score", "--cases", str(path)]) == 2
    assert name in capsys.readouterr().err


def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_jsonl_problems_name_line_and_field(workshop):
    saved = load_saved(workshop / "cases.csv")
    cases = [c.to_json() for c in saved.cases]
    del cases[1]["should_abstain"]
    cases[2]["candidate_abstains"] = "yes"
    cases[3]["required_points"] = [["15 minutes", ""]]
    _write_jsonl(workshop / "chunks.jsonl", [c.to_json() for c in saved.chunks])
    _write_jsonl(workshop / "claims.jsonl", [c.to_json() for c in saved.claims] + [{"case_id": "W99", "claim": "x",
                                                                                    "support_chunk_ids": []}])
    _write_jsonl(workshop / "cases.jsonl", cases)
    with (workshop / "cases.jsonl").open("a") as f:
        f.write("\n{not json\n")
    message = _load_error(workshop / "cases.jsonl")
    assert "cases.jsonl:2: should_abstain: missing" in message
    assert "cases.jsonl:3: candidate_abstains: 'yes' is not of type 'boolean'" in message
    assert "cases.jsonl:4: required_points.0.1: '' should be non-empty" in message
    assert "cases.jsonl:12: (json): Expecting property name" in message
    # the cases file is incomplete, so claims are not checked against it (that would only repeat the problem)
    assert "claims.jsonl" not in message


def test_jsonl_points_may_be_strings_or_alternatives_and_records_round_trip(tmp_path):
    case = {"case_id": "A", "question": "q", "expected_chunk_ids": [], "required_points": ["48 hours", ["a", "b"]],
            "candidate_answer": "", "cited_chunk_ids": [], "should_abstain": True, "candidate_abstains": True,
            "retrieved_chunk_ids": [], "metadata": {"note": "ignored"}}
    _write_jsonl(tmp_path / "cases.jsonl", [case])
    loaded = load_saved(tmp_path / "cases.jsonl").cases[0]
    assert loaded.required_points == (("48 hours",), ("a", "b")) and loaded.retrieved_chunk_ids == ()
    assert SavedCase.from_json(loaded.to_json()) == loaded
    # a case without metadata is written without the key, as people write it, and loads back
    bare = SavedCase.from_json({k: v for k, v in case.items() if k != "metadata"})
    (tmp_path / "bare").mkdir()
    _write_jsonl(tmp_path / "bare" / "cases.jsonl", [bare.to_json()])
    assert "metadata" not in bare.to_json() and load_saved(tmp_path / "bare" / "cases.jsonl").cases[0] == bare
    claim = SavedClaim(case_id="A", claim="c", support_chunk_ids=("P1", "P2"))
    assert SavedClaim.from_json(json.loads(json.dumps(claim.to_json()))) == claim


# ---------------------------------------------------------------- files of any size: read once, checked as read


def test_claims_in_any_order_score_to_the_same_rows(workshop, tmp_path):
    in_order = score_saved(workshop / "cases.csv").rows
    first = score_to_run(workshop / "cases.csv", out=tmp_path / "first")
    header, *rows = _rows(workshop / "claims.csv")
    by_case = sorted(rows, key=lambda r: r[0], reverse=True)  # W08's claim first, W01's last; stable within a case
    assert not SavedStream(*resolve_paths(workshop / "cases.csv")).grouped  # in order: read beside the cases
    _write(workshop / "claims.csv", [header, *by_case])
    assert SavedStream(*resolve_paths(workshop / "cases.csv")).grouped  # decided before any case is read
    assert score_saved(workshop / "cases.csv").rows == in_order
    again = score_to_run(workshop / "cases.csv", out=tmp_path / "again")
    assert (again.run_dir / "rows.jsonl").read_bytes() == (first.run_dir / "rows.jsonl").read_bytes()


def test_claims_out_of_order_begin_one_run_only(workshop, tmp_path, monkeypatch):
    """Nothing is begun twice: the claims' order is known before the run directory is made."""
    header, *rows = _rows(workshop / "claims.csv")
    _write(workshop / "claims.csv", [header, *reversed(rows)])
    begun, real = [], to_run.new_run_dir
    monkeypatch.setattr(to_run, "new_run_dir", lambda out, label: begun.append(label) or real(out, label))
    score_to_run(workshop / "cases.csv", out=tmp_path / "out", label="once")
    assert begun == ["once"] and len(list((tmp_path / "out").iterdir())) == 1


def _jsonl_ids(path: Path, ids: list[str]) -> Path:
    path.write_text("".join(json.dumps({"case_id": i}) + "\n" for i in ids), encoding="utf-8")
    return path


@pytest.mark.parametrize("claims, follow", [
    ([], True),  # no claims at all
    (["A", "A", "C"], True),  # each case's claims together, cases without claims skipped
    (["C", "A"], False),  # another order than the cases'
    (["A", "B", "A"], False),  # one case's claims in two places
    (["A", "X"], False),  # a case the cases file lacks (the reading names it)
])
def test_claims_follow_cases_is_decided_from_the_ids(tmp_path, claims, follow):
    cases = _jsonl_ids(tmp_path / "cases.jsonl", ["A", "B", "C", "D"])
    assert claims_follow_cases(cases, _jsonl_ids(tmp_path / "claims.jsonl", claims)) is follow


def test_claims_follow_cases_reads_csv_as_the_reader_does_and_never_raises(workshop, tmp_path):
    cases, claims = workshop / "cases.csv", workshop / "claims.csv"
    assert claims_follow_cases(cases, claims)
    header, *rows = _rows(claims)
    at = header.index("case_id")
    _write(claims, [header, *([*r[:at], f"  {r[at]} ", *r[at + 1:]] for r in rows)])  # ids trimmed, as read
    assert claims_follow_cases(cases, claims)
    (tmp_path / "bad.jsonl").write_bytes(b'{"case_id": "A"}\n\xff\xfe\x00 not text')
    assert not claims_follow_cases(cases, tmp_path / "bad.jsonl")  # unreadable: held, and the reading says why
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "\n", encoding="utf-8")
    assert claims_follow_cases(cases, tmp_path / "deep.jsonl") is False


def test_a_problem_on_the_last_line_leaves_no_run_and_nothing_scored(workshop, tmp_path):
    _set_cell(workshop / "cases.csv", "W10", "should_abstain", "perhaps")
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r"cases\.csv:11: should_abstain: 'perhaps' is not a boolean"):
        score_to_run(workshop / "cases.csv", out=out)
    assert not out.exists() or not any(out.iterdir())


def test_the_manifest_names_each_file_read_with_its_hash(workshop, tmp_path):
    import hashlib

    scored = score_to_run(workshop / "cases.csv", out=tmp_path / "out")
    saved = json.loads((scored.run_dir / "manifest.json").read_text(encoding="utf-8"))["inputs"]["saved"]
    assert [(f["role"], Path(f["path"]).name) for f in saved] == [
        ("cases", "cases.csv"), ("chunks", "chunks.csv"), ("claims", "claims.csv")]
    for f in saved:
        assert f["sha256"] == hashlib.sha256(Path(f["path"]).read_bytes()).hexdigest()


def test_a_million_problems_are_counted_and_the_first_hundred_shown(tmp_path):
    good = {"case_id": "A", "question": "q", "expected_chunk_ids": [], "required_points": [], "candidate_answer": "",
            "cited_chunk_ids": [], "should_abstain": True, "candidate_abstains": True, "retrieved_chunk_ids": []}
    lines = [json.dumps(good)] + [json.dumps(good | {"case_id": f"B{i}", "question": ""}) for i in range(1, 300)]
    lines.insert(150, json.dumps(good))  # a duplicate on line 151: it sorts among the first hundred lines shown
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    message = _load_error(tmp_path / "cases.jsonl")
    shown = message.splitlines()[1:]
    assert message.startswith("300 problems in the saved outputs:") and shown[-1] == "  ... and 200 more"
    assert len(shown) == 101 and shown[0].endswith("cases.jsonl:2: question: '' should be non-empty")
    assert shown[99].endswith("cases.jsonl:101: question: '' should be non-empty")


def test_a_file_that_stops_being_text_halfway_is_one_problem(workshop):
    text = (workshop / "cases.csv").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    lines.insert(3, lines[2])  # a duplicate id on line 4, before the byte that is not UTF-8
    broken = "".join(lines).encode("utf-8").replace(b"W09", b"W\xe909")
    (workshop / "cases.csv").write_bytes(broken)
    message = _load_error(workshop / "cases.csv")
    assert message.startswith("1 problem in the saved outputs:") and "cases.csv:11: (file): not UTF-8 text" in message


# ---------------------------------------------------------------- one record per line, its schema generated from it

_CASE = {"case_id": "A", "question": "q?", "expected_chunk_ids": ["P1"], "required_points": ["x"],
         "candidate_answer": "x.", "cited_chunk_ids": ["P1"], "should_abstain": False, "candidate_abstains": False}


@pytest.mark.parametrize("record, line", [
    (SavedCase, _CASE),
    (SavedCase, _CASE | {"required_points": ["x", ["y", "z"]], "retrieved_chunk_ids": None, "metadata": None}),
    (SavedCase, _CASE | {"required_points": [[]]}),
    (SavedCase, _CASE | {"required_points": [""]}),
    (SavedCase, _CASE | {"case_id": " A"}),
    (SavedCase, _CASE | {"should_abstain": "false"}),
    (SavedCase, _CASE | {"cited_chunk_ids": "P1"}),
    (SavedCase, _CASE | {"later": 1}),
    (SavedCase, {k: v for k, v in _CASE.items() if k != "question"}),
    (SavedChunk, {"chunk_id": "P1", "text": "t", "topic": "x", "metadata": {"a": 1}}),
    (SavedChunk, {"chunk_id": "P1", "text": " "}),
    (SavedChunk, {"chunk_id": 1, "text": "t"}),
    (SavedClaim, {"case_id": "A", "claim": "c", "support_chunk_ids": []}),
    (SavedClaim, {"case_id": "A", "claim": "c", "support_chunk_ids": [""]}),
])
def test_a_saved_line_is_accepted_by_its_record_exactly_when_its_published_schema_accepts_it(record, line):
    from jsonschema import Draft202012Validator
    from pydantic import ValidationError

    name = {SavedCase: "saved_case", SavedChunk: "saved_chunk", SavedClaim: "saved_claim"}[record]
    schema = json.loads((WORKSHOP.parents[1] / "harness" / "schemas" / f"{name}.schema.json").read_text("utf-8"))
    try:
        record.model_validate_json(json.dumps(line))
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == Draft202012Validator(schema).is_valid(line)
