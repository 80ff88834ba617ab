"""Issue #19 item 7: two reviewers importing at once, in two real processes, while a third holds the run lock:
both reviews are saved AND applied (the importer that applies last applies both); a run that stays locked past
--wait is reported as not updated, with the command that applies the saved reviews."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path

from harness.runs import RunLock, read_rows
from tests.review.test_review import _offline, cases_copy  # noqa: F401  (fixture)

CLI = "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
REPO = Path(__file__).resolve().parents[2]


def _rag_eval(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI, *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _sheet(run: Path, tmp_path: Path, reviewer: str, verdict: str) -> Path:
    """The reviewer's export with every claim of an answered row given `verdict` (supported: by rank 1)."""
    path = tmp_path / f"{reviewer}.csv"
    done = subprocess.run([sys.executable, "-c", CLI, "review", str(run), "--reviewer", reviewer, "--export",
                           str(path)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    first = {r.case_id: r.retrieved[0].source_id for r in read_rows(run) if r.retrieved}
    lines = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    for line in lines:
        if line["claim"]:
            line.update(verdict=verdict, source_id=first[line["case_id"]] if verdict == "supported" else "")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(lines[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_two_importers_at_once_both_end_up_in_the_rows_and_summary(tmp_path, cases_copy):  # noqa: F811
    run = _offline(tmp_path, cases_copy, "two")
    ann, bob = _sheet(run, tmp_path, "ann", "supported"), _sheet(run, tmp_path, "bob", "unsupported")
    saved = cases_copy.with_name("cases.reviews.jsonl")
    with RunLock(run):  # a third party (another apply, a resume) holds the run until both have saved their reviews
        procs = [_rag_eval("review", str(run), "--import", str(s), "--reviewer", who)
                 for who, s in (("ann", ann), ("bob", bob))]
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (saved.exists() and '"bob"' in saved.read_text()
                                                    and '"ann"' in saved.read_text()):
            time.sleep(0.05)
        time.sleep(0.5)  # both now try to apply
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    reviewed = [r for r in read_rows(run) if r.claims]
    assert reviewed and all({v.reviewer for c in r.claims for v in c.reviews} == {"ann", "bob"} for r in reviewed)
    assert all(c.status == "disagreement" for r in reviewed for c in r.claims)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["metrics"]["claims_supported"]["mean"] is None  # never 1.000 beside open disagreements


def test_a_run_locked_past_the_wait_says_the_numbers_are_stale_and_apply_fixes_them(tmp_path, cases_copy):  # noqa: F811
    run = _offline(tmp_path, cases_copy, "stale")
    ann = _sheet(run, tmp_path, "ann", "supported")
    with RunLock(run):
        proc = _rag_eval("review", str(run), "--import", str(ann), "--reviewer", "ann", "--wait", "0.5")
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "are saved in" in err and "NOT updated" in err and f"rag-eval review {run} --reviews" in err
    assert "--apply" in err and len(err.strip().splitlines()) == 1
    assert not any(r.claims for r in read_rows(run))  # stale, as the message says
    done = subprocess.run([sys.executable, "-c", CLI, "review", str(run), "--apply"], cwd=REPO, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert any(r.claims for r in read_rows(run))
