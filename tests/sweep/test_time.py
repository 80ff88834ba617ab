"""Time (issue #20 item 13): a sweep shows progress inside each cell and overall with elapsed time and an ETA;
`--dry-run` of run and sweep estimates the wall time from the chat calls and seconds per call (assumed, measured
from a finished run of the same model, or the stated default). The test server answers by its overlap rule,
not a model; its reply times are its own."""

from __future__ import annotations

import io

from harness.cli import main
from harness.cli.sweep import SweepProgress
from harness.settings import RunSettings
from harness.sweep.estimate import DEFAULT_SECONDS_PER_CALL
from harness.sweep.plan import Cell
from tests.conftest import HANDBOOK, sample_cases


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _cell(label: str) -> Cell:
    return Cell(label, (), RunSettings(), label)


def test_the_status_line_shows_each_running_cell_and_the_whole_sweep():
    clock = iter([0.0, 0.0, 0.0, *[40.0] * 20])
    stream = _Tty()
    shown = SweepProgress(4, stream=stream, now=lambda: next(clock))
    shown.cell(1, 4, _cell("top-k=2"), "start")
    shown.cell(2, 4, _cell("top-k=4"), "start")
    shown.inside(1, "cases", 5, 10)
    shown.inside(2, "embedding", 3, 6)
    line = stream.getvalue().rsplit("\r\x1b[K", 1)[1]
    # 0.5 of a cell's cases in 40 s: 3.5 cells left -> 280 s
    assert line == ("sweep 0/4 cells done, 12%, elapsed 0:40, ETA 4:40 | cell 1 top-k=2: cases 5/10 | "
                    "cell 2 top-k=4: embedding 3/6")
    shown.cell(1, 4, _cell("top-k=2"), "done")
    assert "cell 1/4 top-k=2: done in 40.0 s\n" in stream.getvalue()
    assert stream.getvalue().rsplit("\r\x1b[K", 1)[1].startswith("sweep 1/4 cells done, 25%, elapsed 0:40, ETA 2:00")
    shown.close()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_without_a_terminal_each_finished_cell_says_where_the_sweep_is(tmp_path, capsys):
    assert main(["sweep", "--grid", "top-k=2,4", "--k", "1", "2", "--system", "offline", "--docs", str(HANDBOOK),
                 "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "sweeps")]) == 0
    err = capsys.readouterr().err
    assert "cell 1/2 top-k=2: running" in err
    assert "; sweep 1/2 cells done, 50%, elapsed" in err and "; sweep 2/2 cells done, 100%" in err
    assert "ETA" not in err.split("sweep 2/2 cells done")[1]  # nothing left: no ETA


def test_run_dry_run_estimates_the_wall_time(server, tmp_path, capsys):
    common = ["--host", server.url, "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--out",
              str(tmp_path / "results")]
    assert main(["run", *common, "--dry-run", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "chat calls: 21 distinct, 0 cached, 21 to make" in out
    assert (f"estimated wall time: 2:38 (21 chat calls x {DEFAULT_SECONDS_PER_CALL:.1f} s / 2 slots; seconds per "
            f"call the default {DEFAULT_SECONDS_PER_CALL:g} s: no finished run of qwen3:4b") in out
    assert server.chat_bodies() == [] and not (tmp_path / "results").exists()
    assert main(["run", *common, "--dry-run", "--assume-seconds-per-call", "60"]) == 0
    assert "estimated wall time: 21:00 (21 chat calls x 60.0 s / 1 slot; seconds per call assumed" in \
        capsys.readouterr().out
    assert main(["run", *common, "--limit", "3"]) == 0
    capsys.readouterr()
    assert main(["run", *common, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "seconds per call measured: median of qwen3:4b replies in" in out and str(tmp_path / "results") in out


def test_run_dry_run_estimates_the_embedding_time_from_one_chunk_timed(server, tmp_path, capsys):
    """On a CPU server embedding can outlast the chats (issue #44: 84 chunks took 4:33): the dry run embeds one
    chunk of median length, times it, and multiplies by the chunks no cache holds; once they are cached, no
    embedding estimate."""
    import re
    server.embed_delay_s = 0.4  # the test server waits this long before each embedding reply
    common = ["--host", server.url, "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--out",
              str(tmp_path / "results")]
    assert main(["run", *common, "--dry-run"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"estimated embedding time: (\d+):(\d\d) \((\d+) chunks to embed x (\d+\.\d\d) s, timed on one "
                      r"chunk of ([\d,]+) characters with nomic-embed-text", out)
    assert found, out
    minutes, secs, chunks, each = int(found[1]), int(found[2]), int(found[3]), float(found[4])
    assert 0.4 <= each < 2 and chunks == 4  # the handbook's four pages, one chunk each
    assert abs(minutes * 60 + secs - chunks * each) <= 1
    assert out.index("estimated embedding time") < out.index("estimated wall time")
    server.embed_delay_s = 0.0
    assert main(["run", *common, "--limit", "1"]) == 0
    capsys.readouterr()
    assert main(["run", *common, "--dry-run"]) == 0
    assert "estimated embedding time" not in capsys.readouterr().out


def test_sweep_dry_run_has_the_estimate(server, tmp_path, capsys):
    assert main(["sweep", "--grid", "top-k=2,4", "--k", "1", "2", "--host", server.url, "--docs", str(HANDBOOK),
                 "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "s"), "--dry-run",
                 "--assume-seconds-per-call", "10"]) == 0
    assert "estimated wall time: 7:00 (42 chat calls x 10.0 s / 1 slot; seconds per call assumed" in \
        capsys.readouterr().out
