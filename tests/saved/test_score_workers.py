"""`rag-eval score` in worker processes (`harness.saved.case_rows.scored_batches`): the run directory is the same, byte
for byte, whatever the number of workers; bad input still means no run; claims out of order still score. Batches
are made small here (`BATCH`), so that a few hundred cases fill many of them."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.saved import case_rows
from harness.saved.layout import SavedStream, load_saved, resolve_paths
from harness.saved.to_run import _manifest, _setup, score_to_run
from pdfrag.errors import InputError

WORKSHOP = Path(__file__).resolve().parents[2] / "sample_docs" / "workshop"
COPIES = 30  # 300 cases, 3 in 10 without retrieved ids (the lexical retriever), most failing some check
FILES = ("rows.jsonl", "summary.json", "failed.txt", "chart.svg")


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    monkeypatch.setattr(case_rows, "BATCH", 16)


def _saved(folder: Path, *, claims_reversed: bool = False) -> Path:
    """The workshop in the JSONL layout, each case (and its claims) `COPIES` times under ids `<id>~<copy>`."""
    saved = load_saved(WORKSHOP / "cases.csv")
    folder.mkdir()
    cases = [{**c.to_json(), "case_id": f"{c.case_id}~{n}"} for n in range(COPIES) for c in saved.cases]
    claims = [{**c.to_json(), "case_id": f"{case.case_id}~{n}"} for n in range(COPIES) for case in saved.cases
              for c in saved.claims if c.case_id == case.case_id]
    if claims_reversed:  # the last case's claims first; each case's claims keep their order
        claims = sorted(claims, key=lambda c: c["case_id"], reverse=True)
    for name, records in (("cases", cases), ("chunks", [c.to_json() for c in saved.chunks]), ("claims", claims)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder / "cases.jsonl"


def _files(run_dir: Path) -> dict[str, str]:
    return {name: (run_dir / name).read_text(encoding="utf-8").replace(str(run_dir), "RUN") for name in FILES}


def test_two_workers_write_the_run_one_writes(tmp_path):
    """Contract: rows, summary, failed-case table and chart are the same bytes with 1 and with 2 workers (the
    summary's sums are taken in row order either way), and so are the samples the terminal report prints."""
    cases = _saved(tmp_path / "saved")
    one = score_to_run(cases, out=tmp_path / "one", workers=1)
    two = score_to_run(cases, out=tmp_path / "two", workers=2)
    assert _files(one.run_dir) == _files(two.run_dir)
    assert one.summary == two.summary and one.summary.rows == 10 * COPIES
    assert one.failed == two.failed and one.lexical == two.lexical
    assert 0 < one.failed.total < one.summary.rows and one.lexical.total == 3 * COPIES


def test_the_batches_are_scored_by_the_worker_processes_in_order(tmp_path):
    """With 2 workers every batch comes from another process and the batches come back in the cases' order; with 1,
    and with a single batch, they are scored here."""
    cases = _saved(tmp_path / "saved")

    def batches(workers: int, limit: int | None = None) -> list[case_rows.Batch]:
        stream = SavedStream(*resolve_paths(cases))
        pairs = list(stream)[:limit]
        setup = _setup(stream.chunks, stream.has_claims, 2, _manifest((), len(stream.chunks), 2, False))
        return list(case_rows.scored_batches(pairs, setup, workers=workers))

    two = batches(2)
    assert len(two) == -(-10 * COPIES // case_rows.BATCH) and os.getpid() not in {b.pid for b in two}
    ids = [json.loads(line)["case_id"] for b in two for line in b.text.splitlines()]
    assert ids == [f"W{i:02d}~{n}" for n in range(COPIES) for i in range(1, 11)]
    assert {b.pid for b in batches(1)} == {b.pid for b in batches(2, limit=case_rows.BATCH)} == {os.getpid()}
    assert [b.text for b in batches(1)] == [b.text for b in two]


def test_a_bad_last_line_with_workers_leaves_no_run(tmp_path, capsys):
    """Contract: a problem found at the end of the reading, after many batches went to the workers, is the one
    error naming file, line and field, exit 2, and the run directory begun is removed."""
    cases = _saved(tmp_path / "saved")
    lines = cases.read_text(encoding="utf-8").splitlines()
    lines[-1] = re.sub(r'"should_abstain": (true|false)', '"should_abstain": "no"', lines[-1])
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["score", "--cases", str(cases), "--out", str(out), "--workers", "2"]) == 2
    assert f"cases.jsonl:{len(lines)}: should_abstain" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())
    with pytest.raises(InputError):
        score_to_run(cases, out=out, workers=2)


def test_claims_out_of_order_with_workers_score_as_in_order(tmp_path):
    """Contract: claims listed in another order than the cases are held grouped; with workers the run is
    the one of the claims in order, and only that run's directory is left."""
    ordered = score_to_run(_saved(tmp_path / "ordered"), out=tmp_path / "a", workers=2)
    reversed_ = score_to_run(_saved(tmp_path / "reversed", claims_reversed=True), out=tmp_path / "b", workers=2)
    assert [p.name for p in (tmp_path / "b").iterdir()] == [reversed_.run_dir.name]
    assert (ordered.run_dir / "rows.jsonl").read_bytes() == (reversed_.run_dir / "rows.jsonl").read_bytes()
