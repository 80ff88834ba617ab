"""Several servers for `rag-eval run` and `rag-eval sweep`, and a SIGKILLed sweep that resumes (chat rule:
overlap_rule on every test server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import SweepStopped
from harness.runs import read_manifest, read_rows
from harness.sweep.leaderboard_files import read_leaderboard
from harness.sweep.plan import load_sweep
from harness.sweep.run import run_sweep
from tests.conftest import HANDBOOK, REPO, sample_cases
from tests.fake_ollama import FakeOllama


@pytest.fixture
def two():
    a, b = FakeOllama(port=0).start(), FakeOllama(port=0).start()
    a.delay_s = b.delay_s = 0.02  # a busy server lets the other one's workers take the next case
    yield a, b
    a.stop()
    b.stop()


def run_args(tmp_path: Path, *hosts: str) -> list[str]:
    return ["run", *(x for h in hosts for x in ("--host", h)), "--docs", str(HANDBOOK), "--cases",
            sample_cases(tmp_path), "--out", str(tmp_path / "r")]


def test_two_hosts_share_the_cases_and_rows_say_who_answered(two, tmp_path):
    a, b = two
    assert main(run_args(tmp_path, a.url, b.url) + ["--workers", "2"]) == 0
    [run_dir] = (tmp_path / "r").iterdir()
    rows = read_rows(run_dir)
    cases = [json.loads(line)["id"] for line in Path(sample_cases(tmp_path)).read_text().splitlines() if line]
    assert [r.case_id for r in rows] == cases  # complete and in case order
    assert {r.host for r in rows} == {a.url, b.url}
    assert len(a.chat_bodies()) >= 3 and len(b.chat_bodies()) >= 3
    assert len(a.chat_bodies()) + len(b.chat_bodies()) == len(rows)
    assert sum(r.host == b.url for r in rows) == len(b.chat_bodies())  # the recorded host got the request
    assert a.peak_chat_in_flight <= 2 and b.peak_chat_in_flight <= 2  # --workers is per server
    assert b.bodies("/api/embed") and all(not isinstance(x["input"], list) or len(x["input"]) == 1
                                          for x in b.bodies("/api/embed"))  # B embeds questions, builds no index
    manifest = read_manifest(run_dir)
    assert manifest.settings.hosts == (a.url, b.url)
    assert [s["host"] for s in manifest.system.to_json()["servers"]] == [a.url, b.url]


def test_one_host_rows_record_it_and_hosts_can_come_from_a_config(two, tmp_path):
    a, b = two
    assert main(run_args(tmp_path, a.url)) == 0
    [run_dir] = (tmp_path / "r").iterdir()
    assert {r.host for r in read_rows(run_dir)} == {a.url} and b.count() == 0
    config = tmp_path / "two.toml"
    config.write_text(f"hosts = [\"{a.url}\", \"{b.url}\"]\n")
    assert main(run_args(tmp_path) + ["--config", str(config), "--out", str(tmp_path / "c")]) == 0
    [run_dir] = (tmp_path / "c").iterdir()
    assert {r.host for r in read_rows(run_dir)} == {a.url, b.url}


def test_a_server_with_another_build_is_refused_before_any_work(two, tmp_path, capsys):
    a, b = two
    b.models["qwen3:4b"].digest = "f" * 64
    assert main(run_args(tmp_path, a.url, b.url)) == 2
    err = capsys.readouterr().err
    assert "differs between servers" in err and a.url in err and b.url in err
    for server in (a, b):  # nothing loaded, embedded or asked anywhere
        assert server.count("/api/chat") == 0 and server.count("/api/embed") == 0
    assert main(["sweep", "--grid", "top-k=2,4", "--k", "1", *run_args(tmp_path, a.url, b.url)[1:]]) == 2
    assert "differs between servers" in capsys.readouterr().err
    assert a.count("/api/chat") == b.count("/api/chat") == 0


def test_a_sweep_over_two_hosts(two, tmp_path):
    a, b = two
    args = ["sweep", "--grid", "top-k=2,4", "--k", "1", *run_args(tmp_path, a.url, b.url)[1:]]
    assert main(args) == 0
    [sweep_dir] = (tmp_path / "r").iterdir()
    for cell in ("top-k=2", "top-k=4"):
        rows = read_rows(sweep_dir / cell)
        assert len(rows) == 21 and {r.host for r in rows} == {a.url, b.url}
    assert len(a.chat_bodies()) + len(b.chat_bodies()) == 42 and a.chat_bodies() and b.chat_bodies()


def _strip_latency(board: dict) -> dict:
    """The test server reports its wall time as total_duration, so latency (and the Pareto front built on it)
    differs between two sweeps that asked it the same things; every other number must not."""
    def entries(b):
        return [{k: v for k, v in e.items() if not k.startswith("latency") and k != "pareto"} for e in b["entries"]]
    return board["leaderboard"] | {"entries": entries(board["leaderboard"])}


def test_a_killed_sweep_resumes_to_the_same_leaderboard(server, tmp_path):
    cases = sample_cases(tmp_path)
    spec = tmp_path / "sweep.toml"
    spec.write_text("top-k = [2, 4]\nk = [1, 2]\n")
    common = ["--host", server.url, "--docs", str(HANDBOOK), "--cases", cases]
    assert main(["sweep", str(spec), *common, "--out", str(tmp_path / "full"),
                 "--cache-dir", str(tmp_path / "cache-full")]) == 0
    [full] = (tmp_path / "full").iterdir()
    server.reset()
    # Chats go one at a time (--workers 1, shared by the two cells at once): the 30th waits until the kill, so
    # the second cell has answered at least 8 (the first has 21 cases) and at most 20 when it dies.
    server.hold_after = 29
    env = os.environ | {"PDF_RAG_EVAL_CACHE": str(tmp_path / "cache-killed")}
    command = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())", "sweep",
               str(spec), *common, "--out", str(tmp_path / "killed")]
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline, second = time.monotonic() + 90, None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list((tmp_path / "killed").glob("*/top-k=4/rows.jsonl"))
        if found and found[0].read_text().count("\n") >= 3:
            second = found[0].parent
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert second is not None, "the sweep finished or stalled before it could be killed in its second cell"
    sweep_dir = second.parent
    assert json.loads((sweep_dir / "sweep.json").read_text())["status"] == "incomplete"
    assert not (sweep_dir / "leaderboard.json").exists()
    # cells run two at a time: the first may be complete or cut too
    cells = {name: read_manifest(sweep_dir / name).status for name in ("top-k=2", "top-k=4")}
    assert cells["top-k=4"] == "incomplete" and 3 <= len(read_rows(second)) < 21
    saved = {name: (sweep_dir / name / "rows.jsonl").read_bytes() for name in cells}
    rows_saved = sum(len(read_rows(sweep_dir / name)) for name in cells)
    server.hold_after = None
    server.release()
    chats_before = len(server.chat_bodies())
    done = subprocess.run([sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
                           "sweep", "--resume", str(sweep_dir)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    for name, status in cells.items():
        assert f"{name}: {'complete, kept' if status == 'complete' else 'resuming'}" in done.stderr
        assert (sweep_dir / name / "rows.jsonl").read_bytes().startswith(saved[name])  # saved rows untouched
        assert [r.case_id for r in read_rows(sweep_dir / name)] == [r.case_id for r in read_rows(full / name)]
    assert len(server.chat_bodies()) - chats_before <= 42 - rows_saved  # only the missing cases were asked
    assert read_manifest(second).resumed_at
    resumed = json.loads((sweep_dir / "leaderboard.json").read_text())
    uninterrupted = json.loads((full / "leaderboard.json").read_text())
    assert _strip_latency(resumed) == _strip_latency(uninterrupted)
    board, _ = read_leaderboard(sweep_dir / "leaderboard.json")
    assert board.entry("top-k=4").p_holm is not None


def test_draft_spreads_pages_over_two_hosts_with_the_same_drafts(two, tmp_path, server):
    """Chat rule: tests/support/draft_rules.py `draft_rule` on every server."""
    from harness.drafting.records import read_drafts
    from tests.support import draft_rules as rules

    a, b = two
    for fake in (a, b, server):
        fake.chat_rule = rules.draft_rule
    one = ["draft", "--docs", str(HANDBOOK), "--host", server.url, "--out", str(tmp_path / "one.jsonl"),
           "--cache-dir", str(tmp_path / "c1")]
    assert main(one) == 0
    both = ["draft", "--docs", str(HANDBOOK), "--host", a.url, "--host", b.url, "--out", str(tmp_path / "two.jsonl"),
            "--cache-dir", str(tmp_path / "c2")]
    assert main(both) == 0
    drafting = [x for x in a.chat_bodies() + b.chat_bodies() if "drafts" in json.dumps(x.get("format") or {})]
    assert [x for x in a.chat_bodies() if x in drafting] and [x for x in b.chat_bodies() if x in drafting]
    strip = lambda ds: [(d.draft_id, d.question, d.quote, d.verification.passed) for d in ds]  # noqa: E731
    assert strip(read_drafts(tmp_path / "two.jsonl")) == strip(read_drafts(tmp_path / "one.jsonl"))


def test_draft_refuses_servers_with_different_builds(two, tmp_path, capsys):
    a, b = two
    b.models["qwen3:4b"].digest = "f" * 64
    assert main(["draft", "--docs", str(HANDBOOK), "--host", a.url, "--host", b.url, "--out",
                 str(tmp_path / "d.jsonl")]) == 2
    assert "differs between servers" in capsys.readouterr().err
    assert a.count("/api/chat") == b.count("/api/chat") == 0


def test_ctrl_c_stops_a_sweep_resumably(server, tmp_path):
    """The server answers two chats and holds the rest until the test has sent Ctrl-C, so the sweep is
    certainly mid-cell when interrupted, however slow the machine."""
    server.hold_after = 2
    env = os.environ | {"PDF_RAG_EVAL_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())", "sweep", "--grid",
               "top-k=2,4", "--k", "1", "--host", server.url, "--docs", str(HANDBOOK), "--cases",
               sample_cases(tmp_path), "--out", str(tmp_path / "o")]
    # A shell starts background jobs with SIGINT ignored, and the child would inherit that: Ctrl-C as in a terminal
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
            p.read_text().count("\n") >= 1 for p in (tmp_path / "o").glob("*/*/rows.jsonl")):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)  # time for the handler to set the sweep's stop before the held answers come back
    server.release()
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err
    assert "interrupted" in err and "rag-eval sweep --resume" in err
    [sweep_dir] = (tmp_path / "o").iterdir()
    assert main(["sweep", "--resume", str(sweep_dir)]) == 0
    assert all(len(read_rows(sweep_dir / c)) == 21 for c in ("top-k=2", "top-k=4"))


def test_ctrl_c_while_a_cell_builds_its_index_says_how_to_resume(server, tmp_path):
    """Ctrl-C before a cell's run has a directory (here: while its chunks are embedded) still stops the sweep
    with the resume command, and the resume finishes every cell."""
    flags = {"docs": str(HANDBOOK), "cases": sample_cases(tmp_path), "out": str(tmp_path / "o"), "k": (1,),
             "host": server.url}
    grid = ["top-k=2,4"]

    def ctrl_c_while_embedding(stage: str, done: int, total: int) -> None:
        if stage == "embedding":
            raise KeyboardInterrupt

    with pytest.raises(SweepStopped, match="rag-eval sweep --resume") as stopped:
        run_sweep(load_sweep(None, grid=grid, flags=flags), flags, grid=grid, progress=ctrl_c_while_embedding)
    assert stopped.value.exit_code == 130 and "interrupted" in str(stopped.value)
    assert len(server.chat_bodies()) == 0
    assert main(["sweep", "--resume", str(stopped.value.sweep_dir)]) == 0
    assert all(len(read_rows(stopped.value.sweep_dir / c)) == 21 for c in ("top-k=2", "top-k=4"))
