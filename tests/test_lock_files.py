"""Lock files are removed when released (issue #30 item 7: `sample_docs/all_cases.reviews.jsonl.lock` stayed and
showed in `git status`), and the locks still exclude: a waiter whose file its holder removed locks the new one.
The judge's replies come from the test server's scripted judge rule (tests/support/judge_rules.py), not a model."""

from __future__ import annotations

import csv
import io
import shutil
import threading
import time
from pathlib import Path

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.runs import RunLock, read_rows, utc_now
from harness.settings import RunSettings
from pdfrag.safe_files import file_lock
from tests.conftest import SAMPLE_DOCS
from tests.support.judge_rules import judge_rule


def _locks(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".lock"))


def _offline_run(tmp_path: Path) -> Path:
    cases = tmp_path / "cases" / "cases.jsonl"
    cases.parent.mkdir()
    shutil.copy(SAMPLE_DOCS / "cases.jsonl", cases)
    settings = RunSettings(system="offline", out=str(tmp_path / "runs"), docs=str(SAMPLE_DOCS / "handbook.pdf"),
                           cases=str(cases))
    return run_evaluation(settings).run_dir


def _contend(lock, threads: int = 6, rounds: int = 25) -> int:
    """`threads` threads each add 1 to a shared count `rounds` times, reading and writing it under `lock()` with
    a pause between: a lost update shows two holders at once."""
    count = {"n": 0}

    def work() -> None:
        for _ in range(rounds):
            with lock():
                seen = count["n"]
                time.sleep(0.0005)
                count["n"] = seen + 1

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return count["n"]


def test_file_lock_removes_its_file_and_still_excludes(tmp_path):
    path = tmp_path / "cases.reviews.jsonl.lock"
    with file_lock(path):
        assert path.exists()
    assert not path.exists()
    assert _contend(lambda: file_lock(path)) == 6 * 25
    assert _locks(tmp_path) == []


def test_a_run_lock_removes_its_file_and_still_excludes(tmp_path):
    with RunLock(tmp_path):
        assert (tmp_path / ".lock").exists()
    assert not (tmp_path / ".lock").exists()

    class Held:
        def __enter__(self):
            self.lock = RunLock(tmp_path).acquire(utc_now(), wait_s=60)

        def __exit__(self, *exc):
            self.lock.release()

    assert _contend(Held, threads=4, rounds=10) == 40
    assert _locks(tmp_path) == []


def test_no_lock_file_stays_after_a_run_a_review_import_and_a_judge_run(tmp_path, server, capsys):
    run = _offline_run(tmp_path)
    assert _locks(tmp_path) == []
    sheet = tmp_path / "review.csv"
    assert main(["review", str(run), "--export", str(sheet), "--reviewer", "ann"]) == 0
    lines = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8"))))
    for line in lines:
        line["verdict"] = "unsupported" if line["claim"] else "none"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(lines[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    sheet.write_text(out.getvalue(), encoding="utf-8")
    assert main(["review", str(run), "--import", str(sheet), "--reviewer", "ann"]) == 0
    assert all(r.human_claim_review == "reviewed" for r in read_rows(run))
    assert (tmp_path / "cases" / "cases.reviews.jsonl").exists() and _locks(tmp_path) == []
    server.chat_rule = judge_rule()
    assert main(["judge", str(run), "--host", server.url]) == 0
    assert _locks(tmp_path) == []
