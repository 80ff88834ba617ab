"""Subsets of the cases (issue #20 item 14): --only-tag, --only-ids, --limit, --sample --seed on run, check and
sweep; the manifest records the selection; compare refuses two different selections unless --shared-only.
Runs use the offline system (BM25, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.runs import read_json, read_rows
from tests.conftest import HANDBOOK, sample_cases

IDS = [json.loads(line)["id"] for line in Path(HANDBOOK.with_name("cases.jsonl")).read_text().splitlines()]
TAGS = {json.loads(line)["id"]: json.loads(line).get("tags", [])
        for line in Path(HANDBOOK.with_name("cases.jsonl")).read_text().splitlines()}


def _run(tmp_path: Path, label: str, *flags: str) -> Path:
    out = tmp_path / "results"
    assert main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--out", str(out),
                 "--label", label, *flags]) == 0
    (run,) = out.glob(f"*-{label}")
    return run


def _ids(run: Path) -> list[str]:
    return [r.case_id for r in read_rows(run)]


def test_only_tag_repeatable_and_recorded(tmp_path, capsys):
    run = _run(tmp_path, "tags", "--only-tag", "rephrasing", "--only-tag", "multi-page")
    expected = [i for i in IDS if {"rephrasing", "multi-page"} & set(TAGS[i])]
    assert _ids(run) == expected and len(expected) == 6
    selection = read_json(run / "manifest.json")["selection"]
    assert selection == {"only_tag": ["rephrasing", "multi-page"], "selected": 6, "of": 21}
    assert "selected: 6 of 21 cases (only-tag rephrasing multi-page)" in capsys.readouterr().out


def test_only_ids_from_a_file_or_a_list_then_limit(tmp_path):
    listed = tmp_path / "ids.txt"
    listed.write_text(f"# the ones I am fixing\n{IDS[5]}\n\n{IDS[2]}\n{IDS[9]}\n")
    run = _run(tmp_path, "file", "--only-ids", str(listed), "--limit", "2")
    assert _ids(run) == [IDS[2], IDS[5]]  # file order of the cases, then the first two
    selection = read_json(run / "manifest.json")["selection"]
    # recorded as it was read: a file, `@` and its name (issue #27 item 8)
    assert selection["only_ids"] == f"@{listed}" and len(selection["ids_sha256"]) == 64 and selection["limit"] == 2
    assert _ids(_run(tmp_path, "list", "--only-ids", f"{IDS[3]}, {IDS[0]}")) == [IDS[0], IDS[3]]


def test_limit_is_the_first_n_and_sample_is_seeded(tmp_path):
    assert _ids(_run(tmp_path, "limit", "--limit", "5")) == IDS[:5]
    first = _ids(_run(tmp_path, "s1", "--sample", "6", "--seed", "7"))
    again = _ids(_run(tmp_path, "s2", "--sample", "6", "--seed", "7"))
    other = _ids(_run(tmp_path, "s3", "--sample", "6", "--seed", "8"))
    assert first == again and first != other and len(first) == 6
    assert first == [i for i in IDS if i in first]  # kept in file order
    assert read_json(next((tmp_path / "results").glob("*-s1")) / "manifest.json")["selection"]["seed"] == 7


@pytest.mark.parametrize("flags, message", [
    (["--only-ids", "leave-days,no-such-case"], "--only-ids: 1 id(s) not in"),
    (["--only-tag", "nope"], "--only-tag nope: no case carries it; tags in"),
    (["--limit", "0"], "--limit must be at least 1"),
])
def test_bad_selections_are_bad_input(tmp_path, capsys, flags, message):
    assert main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                 "--out", str(tmp_path / "r"), *flags]) == 2
    assert message in capsys.readouterr().err


def test_limit_and_sample_together_is_bad_usage(tmp_path):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--offline", "--limit", "2", "--sample", "2"])
    assert stop.value.code == 2


def test_check_reports_the_selection(tmp_path, capsys):
    assert main(["check", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--only-tag", "dev",
                 "--sample", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "21 cases OK" in out and "selected: 3 of 21 cases (only-tag dev, sample 3, seed 1)" in out


def test_compare_refuses_different_selections_unless_shared_only(tmp_path, capsys):
    a = _run(tmp_path, "a", "--limit", "8")
    b = _run(tmp_path, "b", "--limit", "8", "--top-k", "2", "--k", "1", "2")
    assert main(["compare", str(a), str(b)]) == 0
    c = _run(tmp_path, "c", "--only-ids", ",".join(IDS[:8]))  # the same 8 cases, chosen another way
    capsys.readouterr()
    assert main(["compare", str(a), str(c)]) == 2
    err = capsys.readouterr().err
    assert "ran on different selections of cases (A: limit 8; B: only-ids" in err and "--shared-only" in err
    assert main(["compare", str(a), str(c), "--shared-only"]) == 0


def test_a_sweep_passes_the_selection_to_every_cell(tmp_path):
    out = tmp_path / "sweeps"
    assert main(["sweep", "--grid", "top-k=2,4", "--k", "1", "2", "--system", "offline", "--docs", str(HANDBOOK),
                 "--cases", sample_cases(tmp_path), "--only-tag", "heldout", "--limit", "4", "--out",
                 str(out)]) == 0
    cells = [p for p in next(out.iterdir()).iterdir() if (p / "manifest.json").exists()]
    assert len(cells) == 2
    for cell in cells:
        assert read_json(cell / "manifest.json")["selection"]["selected"] == 4
        assert _ids(cell) == [i for i in IDS if "heldout" in TAGS[i]][:4]


# -- issue #27 item 8: which reading of --only-ids, a byte-order mark, an empty value ---------------------------


def test_at_file_names_a_file_and_the_selected_line_shows_the_choice(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("fixing.txt").write_text(f"{IDS[4]}\n{IDS[1]}\n")
    run = _run(tmp_path, "at", "--only-ids", "@fixing.txt")
    assert _ids(run) == [IDS[1], IDS[4]] and read_json(run / "manifest.json")["selection"]["only_ids"] == "@fixing.txt"
    assert "(only-ids @fixing.txt)" in capsys.readouterr().out
    _run(tmp_path, "bare", "--only-ids", "fixing.txt")  # a bare name of a file that is no list of ids: the file
    assert "(only-ids @fixing.txt)" in capsys.readouterr().out


def test_a_file_named_like_a_list_of_ids_is_refused_naming_both_readings(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    both = f"{IDS[0]},{IDS[1]}"
    Path(both).write_text(f"{IDS[7]}\n")  # the file would select another case than the list
    code = main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--only-ids", both,
                 "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and f"--only-ids '{both}' is both a file here and a list of 2 case id(s)" in err
    assert f"--only-ids @{both}" in err and not (tmp_path / "r").exists()
    assert _ids(_run(tmp_path, "explicit", "--only-ids", f"@{both}")) == [IDS[7]]


def test_a_byte_order_mark_is_dropped_from_an_ids_file(tmp_path):
    listed = tmp_path / "ids.txt"
    listed.write_bytes(f"\ufeff{IDS[0]}\r\n{IDS[2]}\r\n".encode("utf-8"))  # as Notepad saves it
    assert _ids(_run(tmp_path, "bom", "--only-ids", f"@{listed}")) == [IDS[0], IDS[2]]


@pytest.mark.parametrize("value, message", [
    ("", "--only-ids is empty"),
    ("  ", "--only-ids is empty"),
    (",", "no case id in it"),
    ("ids.txt", "1 id(s) not in"),  # no such file: read as an id, and the error says no file has that name
])
def test_an_empty_or_unknown_only_ids_is_refused(tmp_path, capsys, value, message):
    code = main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--only-ids", value,
                 "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and not (tmp_path / "r").exists()
    if value == "ids.txt":
        assert "no file has that name; @FILE names a file" in err
