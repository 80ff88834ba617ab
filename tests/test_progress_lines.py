"""Progress where stderr is not a terminal (issue #30 item 1): a line when a stage starts, then one at least every
5 s from a heartbeat (also while nothing finishes: a slow server still shows life), with counts, rate and ETA, as
plain lines a log file and `tail -f` read; the terminal keeps its bar; `--quiet` turns both off. The subprocess
tests run `evaluate_rag.py` with stderr redirected to a file against the test server (tests/fake_ollama.py),
which waits `delay_s` before each chat reply; it answers by its overlap rule, not a model."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.cli.sweep import SweepProgress
from harness.settings import RunSettings
from harness.sweep.plan import Cell
from pdfrag.terminal import ProgressBar, Stages
from tests.conftest import HANDBOOK, REPO, sample_cases


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _wait_for(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_a_stage_that_does_not_advance_still_prints_a_line_every_interval():
    stream = io.StringIO()
    bar = ProgressBar("cases", stream=stream, reused="done before", every_s=0.05)
    bar(0, 10)
    assert stream.getvalue() == "cases 0/10 0%, elapsed 0:00, waiting for the first to finish\n"
    assert _wait_for(lambda: stream.getvalue().count("\n") >= 3)  # no case finished: the heartbeat alone
    bar(4, 10)
    assert _wait_for(lambda: "cases 4/10 40%," in stream.getvalue())
    bar.close()
    after = stream.getvalue()
    time.sleep(0.2)
    assert stream.getvalue() == after, "a line after close()"
    line = after.splitlines()[-1]
    assert re.fullmatch(r"cases 4/10 40%, \d+\.\d/s, elapsed 0:00, ETA \d:\d\d", line), line
    assert "\r" not in after and "\x1b" not in after


def test_a_stage_whose_first_update_already_counts_some_shows_no_rate_yet():
    # drafting's first "parametric checks" update came after one reply: "1/5, 54232.9/s, ETA 0:00" said nothing
    stream = io.StringIO()
    with ProgressBar("parametric checks", stream=stream, every_s=0) as bar:
        bar(1, 5, reused=0)
        assert stream.getvalue() == "parametric checks 1/5 20%, elapsed 0:00, waiting for the next to finish\n"


def test_the_end_of_a_stage_is_one_last_line_and_stops_the_heartbeat():
    stream = io.StringIO()
    bar = ProgressBar("embedding", stream=stream, every_s=0.05)
    bar(0, 3)
    bar(3, 3)
    assert _wait_for(lambda: bar._beat is not None and not bar._beat.is_alive())
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("embedding 0/3 0%") and lines[-1].startswith("embedding 3/3 100%")
    assert all("/3" in line for line in lines)


def test_updates_from_many_threads_while_the_heartbeat_writes_keep_whole_lines():
    stream = io.StringIO()
    bar = ProgressBar("cases", stream=stream, every_s=0.001)
    bar(0, 4000)

    def work(start: int) -> None:
        for n in range(start, 4000, 4):
            bar(n, 4000)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar(4000, 4000)
    bar.close()
    assert all(re.match(r"cases \d+/4000 \d+%, ", line) for line in stream.getvalue().splitlines())


def test_quiet_shows_nothing_on_a_terminal_or_in_a_log():
    for stream in (io.StringIO(), _Tty()):
        with Stages(lambda stage, out=stream: ProgressBar(stage, stream=out, quiet=True, every_s=0.01)) as progress:
            progress("cases", 0, 5)
            time.sleep(0.05)
            progress("cases", 5, 5)
        assert stream.getvalue() == ""


def test_the_terminal_keeps_its_bar_and_its_clock_moves_while_nothing_finishes():
    """On a terminal the bar is redrawn in place, never a new line until the stage ends; while the first batch is
    out the heartbeat redraws it, so its clock moves and it says what it waits for (issue #44: an embedding bar
    sat at 0 for two minutes behind its first batch of 32)."""
    seconds = [0.0]
    stream = _Tty()
    bar = ProgressBar("embedding", stream=stream, every_s=0.01, now=lambda: seconds[0])
    bar(0, 84)
    seconds[0] = 125.0
    assert _wait_for(lambda: "elapsed 2:05" in stream.getvalue())
    assert f"embedding 0/84 [{'.' * 28}] elapsed 2:05, waiting for the first to finish" in stream.getvalue()
    bar(84, 84)
    bar.close()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith(f"84/84 [{'#' * 28}] 1.5 s each, elapsed 2:05\n")


def test_a_slow_stage_says_the_seconds_each_takes_instead_of_a_rate_of_zero():
    """45 s a case is "45 s each", not "0.0/s" (issue #44); from one a second on, a rate."""
    seconds = [0.0]
    stream = io.StringIO()
    with ProgressBar("cases", stream=stream, every_s=0, now=lambda: seconds[0], reused="done before") as bar:
        bar(0, 10)
        seconds[0] = 90.0
        bar(2, 10)
        seconds[0] = 100.0
        bar(10, 10)
    assert stream.getvalue().splitlines() == [
        "cases 0/10 0%, elapsed 0:00, waiting for the first to finish",
        "cases 10/10 100%, 10 s each, elapsed 1:40"]
    seconds[0] = 0.0
    bar = ProgressBar("cases", stream=_Tty(), now=lambda: seconds[0])
    seconds[0] = 90.0
    assert bar._line(2, 10).endswith("45 s each, elapsed 1:30, ETA 6:00")


def test_a_new_stage_stops_the_heartbeat_of_the_one_before():
    stream = io.StringIO()
    with Stages(lambda stage: ProgressBar(stage, stream=stream, every_s=0.02)) as progress:
        progress("embedding", 0, 2)  # never reported done (the caller moved on)
        progress("cases", 0, 5)
        first = progress.bars["embedding"]
        assert first._beat is not None and _wait_for(lambda: not first._beat.is_alive())
        time.sleep(0.1)
        assert "embedding 0/2" not in stream.getvalue().splitlines()[-1]
    assert all(not b._beat.is_alive() for b in progress.bars.values() if b._beat)


def test_ctrl_c_inside_the_stages_stops_every_heartbeat():
    stream = io.StringIO()
    try:
        with Stages(lambda stage: ProgressBar(stage, stream=stream, every_s=0.01)) as progress:
            progress("cases", 0, 9)
            beat = progress.bars["cases"]._beat
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert beat is not None and not beat.is_alive()
    after = stream.getvalue()
    time.sleep(0.05)
    assert stream.getvalue() == after


def test_a_sweep_in_a_log_has_a_start_line_and_a_heartbeat_naming_the_running_cell():
    stream = io.StringIO()
    shown = SweepProgress(2, stream=stream, every_s=0.02)
    assert stream.getvalue().startswith("sweep 0/2 cells done, 0%")
    shown.cell(1, 2, Cell("top-k=2", (), RunSettings(), "top-k=2"), "start")
    shown.inside(1, "cases", 3, 21)
    assert _wait_for(lambda: "| cell 1 top-k=2: cases 3/21" in stream.getvalue())
    shown.close()
    after = stream.getvalue()
    time.sleep(0.1)
    assert stream.getvalue() == after and "\r" not in after
    quiet = io.StringIO()
    SweepProgress(2, stream=quiet, quiet=True, every_s=0.01).close()
    assert quiet.getvalue() == ""


def _evaluate(server, tmp_path: Path, log: Path, *extra: str) -> subprocess.Popen:
    env = os.environ | {"PDF_RAG_EVAL_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, str(REPO / "evaluate_rag.py"), "--host", server.url, "--docs", str(HANDBOOK),
               "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "results"), *extra]
    with open(log, "w", encoding="utf-8") as err:  # `python evaluate_rag.py ... 2> log`
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)


def test_a_redirected_run_against_a_slow_server_logs_counts_before_it_ends(server, tmp_path):
    server.delay_s, server.embed_delay_s = 0.35, 0.0  # 21 cases one at a time: about 7 s of answering
    log = tmp_path / "run.log"
    proc = _evaluate(server, tmp_path, log)
    try:
        seen_running = ""
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            text = log.read_text(encoding="utf-8")
            if len(re.findall(r"^cases \d+/21 ", text, re.M)) >= 2:  # the start line and a heartbeat
                seen_running = text
                break
            time.sleep(0.05)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert seen_running, f"the log had fewer than two progress lines while the run went on:\n{log.read_text()}"
    assert re.search(r"^cases 0/21 0%, elapsed 0:00", seen_running, re.M)
    assert re.search(r"^cases \d+/21 \d+%, (\d+\.\d/s, )?elapsed 0:0[5-9]", seen_running, re.M)  # 5 s later
    text = log.read_text(encoding="utf-8")
    assert re.search(r"^cases 21/21 100%, \d+\.\d/s, elapsed", text, re.M)
    assert "\r" not in text and "\x1b" not in text


def test_quiet_keeps_progress_out_of_the_log(server, tmp_path):
    log = tmp_path / "run.log"
    proc = _evaluate(server, tmp_path, log, "--quiet")
    assert proc.wait(timeout=120) == 0
    text = log.read_text(encoding="utf-8")
    assert not re.search(r"^(cases|embedding|reading PDFs) \d+/\d+", text, re.M), text
