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
    assert selection["only_ids"] == str(listed) and len(selection["ids_sha256"]) == 64 and selection["limit"] == 2
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
