"""Issue #11, harness side: locked run directories (two real processes), unwritable output, label checks,
exit codes and messages."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main as rag_eval
from harness.errors import RunStopped
from harness.evaluate import run_evaluation
from harness.runs import RowWriter, read_manifest, read_rows
from harness.settings import RunSettings
from tests.conftest import REPO, SAMPLE_DOCS, sample_cases

EVALUATE = [sys.executable, str(REPO / "evaluate_rag.py")]


def _write_cases(tmp_path: Path, lines: list[dict]) -> str:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in lines))
    return str(path)


def test_a_second_process_cannot_write_a_locked_run(tmp_path):
    out = tmp_path / "out"
    first = subprocess.Popen([*EVALUATE, "--system", "tests.support.sysfixtures:slow",
                              "--cases", sample_cases(tmp_path), "--out", str(out)],
                             cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("*/rows.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.05)
        run_dir = next(out.iterdir())
        second = subprocess.run([*EVALUATE, "--resume", str(run_dir)], cwd=REPO, capture_output=True, text=True,
                                timeout=60)
        assert second.returncode == 1
        assert f"is being written by process {first.pid}" in second.stderr
    finally:
        first.wait(timeout=120)
    assert first.returncode == 0, first.stderr
    assert len(read_rows(run_dir)) == 21  # the first process finished alone: no duplicate rows


def test_out_that_is_a_file_is_one_line_naming_it(tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    code = rag_eval(["run", "--offline", "--cases", sample_cases(tmp_path), "--out", str(blocker)])
    err = capsys.readouterr().err
    assert code == 1 and str(blocker) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_full_disk_mid_run_keeps_the_rows_written_and_shows_the_resume_command(tmp_path, monkeypatch):
    # Injected write failure: this machine offers no tiny filesystem to tests.
    real_write, calls = RowWriter.write, {"n": 0}

    def failing(self, row):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        real_write(self, row)

    monkeypatch.setattr(RowWriter, "write", failing)
    settings = RunSettings(cases=sample_cases(tmp_path), out=str(tmp_path / "out"), system="offline")
    with pytest.raises(RunStopped, match="No space left on device") as stopped:
        run_evaluation(settings)
    assert "rag-eval run --resume" in str(stopped.value)
    assert len(read_rows(stopped.value.run_dir)) == 3
    monkeypatch.setattr(RowWriter, "write", real_write)
    result = run_evaluation(settings, resume=stopped.value.run_dir)
    assert len(read_rows(result.run_dir)) == 21 and result.manifest.status == "complete"


def test_rows_are_flushed_each_and_fsynced_at_most_once_a_second_and_on_close(tmp_path, monkeypatch):
    import os

    synced = []
    monkeypatch.setattr(os, "fsync", synced.append)
    settings = RunSettings(cases=sample_cases(tmp_path), out=str(tmp_path / "out"), system="offline")
    run_dir = run_evaluation(settings).run_dir
    rows_file = (run_dir / "rows.jsonl").resolve()
    row_syncs = [fd for fd in synced if Path(f"/proc/self/fd/{fd}").exists()
                 and Path(os.readlink(f"/proc/self/fd/{fd}")) == rows_file]
    assert len(read_rows(run_dir)) == 21 and row_syncs == []  # the rows' descriptor was synced, then closed
    monkeypatch.setattr(RowWriter, "SYNC_EVERY", 0.0)
    writer, seen = RowWriter(tmp_path), []
    monkeypatch.setattr(os, "fsync", lambda fd: seen.append(fd))
    rows = read_rows(run_dir)
    for row in rows[:3]:
        writer.write(row)
        assert (tmp_path / "rows.jsonl").read_text().count("\n") == len(seen)  # whole lines, on disk, each synced
    writer.close()
    assert len(seen) == 4  # three rows and the close


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-5"])
def test_bad_timeouts_are_refused_with_exit_2(value, tmp_path, capsys):
    assert rag_eval(["run", "--offline", "--timeout", value, "--out", str(tmp_path)]) == 2
    assert "timeout" in capsys.readouterr().err


def test_every_row_errored_is_its_own_exit_code(tmp_path, capsys):
    code = rag_eval(["run", "--system", "tests.support.sysfixtures:broken", "--cases", sample_cases(tmp_path),
                     "--out", str(tmp_path / "out")])
    assert code == 4
    assert "every one of the 21 rows errored" in capsys.readouterr().err


def test_a_finished_run_prints_the_report_command(tmp_path, capsys):
    assert rag_eval(["run", "--offline", "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    run_dir = next((tmp_path / "out").iterdir())
    assert f"rag-eval report {run_dir}" in out


PAGE = "handbook.pdf#p2"
HOTEL = "Hotel costs are reimbursed up to EUR 160 per night"


def test_plain_page_ids_are_evidence_shorthand(tmp_path, capsys):
    cases = _write_cases(tmp_path, [{"id": "a", "question": "Hotel limit?", "evidence": [PAGE], "facts": ["160"],
                                     "abstain": False}])
    assert rag_eval(["check", "--cases", cases]) == 0
    result = run_evaluation(RunSettings(cases=cases, out=str(tmp_path / "o"), system="offline"))
    assert read_rows(result.run_dir)[0].expected.evidence[0].source_id == PAGE


def test_duplicate_evidence_is_refused(tmp_path, capsys):
    cases = _write_cases(tmp_path, [{"id": "a", "question": "Hotel limit?", "evidence": [PAGE, {"source_id": PAGE}],
                                     "facts": ["160"], "abstain": False}])
    assert rag_eval(["check", "--cases", cases]) == 2
    assert "evidence/1: the same evidence item twice" in capsys.readouterr().err


def test_evidence_on_a_page_without_text_is_refused(tmp_path, make_pdf, capsys):
    make_pdf("scan.pdf", ["Some text on page one about the travel policy.", ""])
    cases = _write_cases(tmp_path, [{"id": "s", "question": "What is on page two?",
                                     "evidence": ["scan.pdf#p2"], "facts": [], "abstain": False}])
    assert rag_eval(["check", "--docs", str(tmp_path / "docs"), "--cases", cases]) == 2
    assert "has no text layer" in capsys.readouterr().err


def test_check_uses_the_runs_chunk_settings(tmp_path, capsys):
    # A quote that spans most of a page fits one 2000-character chunk but is cut by 300-character chunks.
    from pdfrag.pdfs import read_documents
    page = next(p for d in read_documents(SAMPLE_DOCS) for p in d.pages if p.source_id == PAGE)
    quote = " ".join(page.text.split())[:600]
    cases = _write_cases(tmp_path, [{"id": "long", "question": "q?", "evidence": [{"source_id": PAGE, "quote": quote}],
                                     "facts": [], "abstain": False}])
    assert rag_eval(["check", "--cases", cases]) == 0
    capsys.readouterr()
    assert rag_eval(["check", "--cases", cases, "--chunk-size", "300", "--chunk-overlap", "50"]) == 2
    assert "cut by a chunk boundary" in capsys.readouterr().err
    config = tmp_path / "small.toml"
    config.write_text("chunk-size = 300\nchunk-overlap = 50\n")
    assert rag_eval(["check", "--cases", cases, "--config", str(config)]) == 2
    # A system of the user's own is not held to our chunker.
    assert rag_eval(["check", "--cases", cases, "--chunk-size", "300", "--chunk-overlap", "50",
                     "--system", "tests.support.sysfixtures:slow"]) == 0


def test_scanned_pages_are_warned_about_on_the_terminal(tmp_path, make_pdf, capsys):
    make_pdf("scan.pdf", ["The travel policy allows EUR 160 per night for hotels.", ""])
    cases = _write_cases(tmp_path, [{"id": "h", "question": "Hotel limit per night?", "evidence": ["scan.pdf#p1"],
                                     "facts": ["160"], "abstain": False}])
    assert rag_eval(["run", "--offline", "--docs", str(tmp_path / "docs"), "--cases", cases,
                     "--out", str(tmp_path / "out")]) == 0
    assert "scan.pdf pages 2 have no text layer" in capsys.readouterr().err


def test_compare_does_not_suggest_shared_only_when_nothing_is_shared(tmp_path, capsys):
    one = _write_cases(tmp_path, [{"id": "a", "question": "Hotel?", "evidence": [PAGE], "facts": [],
                                   "abstain": False}])
    a = run_evaluation(RunSettings(cases=one, out=str(tmp_path / "a"), system="offline")).run_dir
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "b", "question": "Hotel?", "evidence": [PAGE], "facts": [],
                                 "abstain": False}) + "\n")
    b = run_evaluation(RunSettings(cases=str(other), out=str(tmp_path / "b"), system="offline")).run_dir
    assert rag_eval(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "share no case" in err and "--shared-only" not in err


def test_manifest_of_a_locked_and_finished_run_is_complete(tmp_path):
    result = run_evaluation(RunSettings(cases=sample_cases(tmp_path), out=str(tmp_path / "o"), system="offline"))
    assert read_manifest(result.run_dir).status == "complete"
    assert not (result.run_dir / ".lock").exists()  # released: the lock went, and its file with it


def test_drafted_and_hand_written_cases_are_summarised_apart(tmp_path, capsys):
    lines = [json.loads(line) for line in (SAMPLE_DOCS / "cases.jsonl").read_text().splitlines() if line.strip()]
    lines[0]["tags"] = ["drafted", "draft:number"]
    cases = _write_cases(tmp_path, lines)
    assert rag_eval(["run", "--offline", "--docs", str(SAMPLE_DOCS / "handbook.pdf"), "--cases", cases,
                     "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "drafted and hand-written cases apart" in out
    summary = json.loads(next((tmp_path / "out").glob("*/summary.json")).read_text())
    assert summary["by_origin"]["drafted"]["passed"]["scored"] == 1
    assert summary["by_origin"]["hand-written"]["passed"]["scored"] == 20


def test_rag_eval_run_says_it_is_loading_the_chat_model(server, tmp_path, capsys):
    # server: the Ollama-compatible test server (its load reply is immediate); the message is what a user sees
    # while a real server loads qwen3:4b from disk.
    assert rag_eval(["run", "--host", server.url, "--docs", str(SAMPLE_DOCS / "handbook.pdf"),
                     "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "out")]) == 0
    assert "loading qwen3:4b…" in capsys.readouterr().err


def test_progress_counts_reused_work_apart_from_the_rate():
    # Item 29: 40 chunks all from the cache used to print a rate like "30144624.4/s".
    import io

    from pdfrag.terminal import ProgressBar
    stream = io.StringIO()
    bar = ProgressBar("embedding", stream=stream)
    bar(40, 40)
    line = stream.getvalue()
    assert "40 from cache" in line and "/s" not in line
    stream = io.StringIO()
    bar = ProgressBar("cases", stream=stream, reused="done before")
    bar(5, 8)
    bar(8, 8)
    assert "5 done before" in stream.getvalue() and "/s" in stream.getvalue()


def test_progress_shows_elapsed_and_an_eta_from_the_fresh_rate():
    # Issue #20 item 13: 2 of 10 cases fresh in 4 s -> 2.0 s each (issue #44: under one a second, the seconds each
    # takes), 8 left -> ETA 0:16; reused work is not in the rate.
    import io

    from pdfrag.terminal import ProgressBar, clock

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    times = iter([0.0, 0.0, 0.0, 4.0, 4.0, 30.0, 30.0])  # start, then two reads per update
    stream = Tty()
    bar = ProgressBar("cases", stream=stream, reused="done before", now=lambda: next(times), every_s=0)  # no clock
    bar(3, 13)
    bar(5, 13)
    last = stream.getvalue().rsplit("\r\x1b[K", 1)[1]
    assert last == "cases 5/13 [##########..................] 2.0 s each, 3 done before, elapsed 0:04, ETA 0:16"
    bar(13, 13)
    assert stream.getvalue().endswith("elapsed 0:30\n") and "ETA" not in stream.getvalue().rsplit("\r\x1b[K", 1)[1]
    assert (clock(59.6), clock(61), clock(3725)) == ("1:00", "1:01", "1:02:05")
