"""`rag-eval rescore`: recompute a saved run's metrics after a label fix, from stored outputs only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.review.rescore import rescore_run
from harness.review.store import Claim, Review, apply_to_run
from harness.runs import read_rows
from harness.settings import RunSettings
from harness.summary import summarize
from pdfrag.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_docs"
SCORED = ("metrics", "fact_results", "quote_validation", "failure_reasons")


def _cases(path: Path, edit=None) -> Path:
    """A copy of the sample cases; `edit(case)` may change a case (return None to drop it)."""
    cases = [json.loads(line) for line in (SAMPLE / "cases.jsonl").read_text().splitlines() if line.strip()]
    if edit:
        cases = [c for c in map(edit, cases) if c is not None]
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rescore")
    cases = _cases(root / "cases.jsonl")
    run = run_evaluation(RunSettings(system="offline", out=str(root / "runs"), label="src",
                                     docs=str(SAMPLE / "handbook.pdf"),
                                     cases=str(cases), chunk_size=1500)).run_dir
    first = read_rows(run)[0]
    review = Review(first.case_id, first.answer.answer_sha256,
                    (Claim("a claim", "supported", first.retrieved[0].source_id),
                     Claim("another", "unsupported")), "ann", "t")
    apply_to_run(run, {review.key: review})
    return run


def test_unchanged_labels_reproduce_every_number(source, tmp_path):
    result = rescore_run(source, _cases(tmp_path / "same.jsonl"), out=tmp_path)
    old, new = read_rows(source), read_rows(result.run_dir)
    for a, b in zip(old, new, strict=True):
        assert {k: getattr(a, k) for k in SCORED} == {k: getattr(b, k) for k in SCORED}
        assert a.answer == b.answer and a.retrieved == b.retrieved
    assert new[0].human_claim_review == "reviewed" and new[0].metrics["claims_supported"] == 0.5
    assert json.loads((result.run_dir / "summary.json").read_text())["metrics"] == \
        json.loads((source / "summary.json").read_text())["metrics"]


def test_corrected_label_changes_only_that_case(source, tmp_path):
    def fix(case):
        if case["id"] == "leave-days":
            case["facts"] = ["26"]
            case["evidence"] = [{"source_id": "handbook.pdf#p2"}]
        return case
    cases = _cases(tmp_path / "fixed.jsonl", fix)
    result = rescore_run(source, cases, out=tmp_path, label="fixed")
    old = {r.case_id: r for r in read_rows(source)}
    new = {r.case_id: r for r in read_rows(result.run_dir)}
    assert old["leave-days"].metrics["facts"] == 1.0 and new["leave-days"].metrics["facts"] == 0.0
    assert new["leave-days"].expected.facts == (("26",),)
    assert "fact '26' not in answer" in new["leave-days"].failure_reasons
    assert new["leave-days"].metrics["hit@1"] == (0.0 if new["leave-days"].retrieved[0].page_id
                                                  != "handbook.pdf#p2" else 1.0)
    assert all(getattr(new[i], k) == getattr(old[i], k) for i in old if i != "leave-days" for k in SCORED)
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["rescored_from"] == {"run_id": source.name, "path": str(source.resolve())}
    assert manifest["status"] == "complete" and manifest["run_id"] == result.run_dir.name
    assert manifest["inputs"]["cases"]["sha256"] != json.loads((source / "manifest.json").read_text())[
        "inputs"]["cases"]["sha256"]
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary == summarize(list(new.values()), manifest["metrics"], manifest["collection"]).to_json()
    assert result.run_dir.name.endswith("-fixed") and result.run_dir.parent == tmp_path


def test_missing_cases_and_changed_questions_are_refused(source, tmp_path):
    dropped = _cases(tmp_path / "dropped.jsonl", lambda c: None if c["id"] in ("ceo-name", "hotel-limit") else c)
    with pytest.raises(InputError, match="2 case.* missing from .*dropped.jsonl: hotel-limit, ceo-name"):
        rescore_run(source, dropped, out=tmp_path)
    reworded = _cases(tmp_path / "reworded.jsonl",
                      lambda c: c | {"question": "Something else?"} if c["id"] == "ceo-name" else c)
    with pytest.raises(InputError, match="changed their question.*ceo-name"):
        rescore_run(source, reworded, out=tmp_path)
    no_page = _cases(tmp_path / "no-page.jsonl",
                     lambda c: c | {"evidence": [{"source_id": "handbook.pdf#p7"}]} if c["id"] == "hotel-limit" else c)
    with pytest.raises(InputError, match="pages the run's documents do not have: handbook.pdf#p7"):
        rescore_run(source, no_page, out=tmp_path)
    assert not any(p.is_dir() for p in tmp_path.iterdir())  # nothing written before the checks pass


def test_cli(source, tmp_path, capsys):
    extra = _cases(tmp_path / "extra.jsonl")
    with extra.open("a") as fh:
        new = {"id": "new-case", "question": "New?", "evidence": [], "facts": [], "abstain": True}
        fh.write(json.dumps(new) + "\n")
    assert main(["rescore", str(source), "--cases", str(extra), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"rescored {source.name} into {tmp_path / 'out'}" in out
    assert "not scored: 1 case(s)" in out and "new-case" in out
    assert main(["rescore", str(source), "--cases", str(tmp_path / "nope.jsonl")]) == 2
