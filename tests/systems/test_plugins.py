"""Plug-ins that misuse the interface (issue 19 item 19) get one clear line naming the plug-in, through the real
command in another process; a plug-in's `sys.exit` inside answer() is that case's error row."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, sample_cases

PLUGIN = "tests.support.sysfixtures"


def _run(tmp_path, factory: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "evaluate_rag.py"), "--system", f"{PLUGIN}:{factory}",
                           "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "out")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("factory", "message"), [
    ("returns_a_class", "the factory returned the class Slow, not an object; return Slow(...) instead"),
    ("describe_raises", "describe() raised KeyError: 'settings'"),
    ("describe_list", "describe() returned list; return a dict such as"),
    ("describe_not_json", "describe().loaded_at: a object (<object object at"),
])
def test_a_misbuilt_plugin_gets_one_line_naming_it_and_no_run_directory(tmp_path, factory, message):
    out = _run(tmp_path, factory)
    assert out.returncode == 2, out.stderr
    last = out.stderr.strip().splitlines()[-1]  # after a "reading PDFs" line when that took over a second
    assert last.startswith(f"error: --system '{PLUGIN}:{factory}': ") and message in last, out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_sys_exit_inside_answer_is_that_cases_error_row_not_a_silent_exit(tmp_path):
    out = _run(tmp_path, "exits")
    assert out.returncode == 0, out.stderr  # before: exit 3, as if a --fail-under threshold had failed, no rows
    run_dir = next((tmp_path / "out").iterdir())
    rows = [json.loads(line) for line in (run_dir / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 21
    errors = {r["case_id"]: r["error"] for r in rows if r["error"]}
    assert errors == {"hotel-limit": "the system called sys.exit(3) while answering; raise an exception instead"}


@pytest.mark.parametrize("factory", ["ahead_raises", "ahead_none"])
def test_a_questions_ahead_hint_that_fails_does_not_stop_the_run(tmp_path, factory):
    out = _run(tmp_path, factory)
    assert out.returncode == 0, out.stderr
    run_dir = next((tmp_path / "out").iterdir())
    rows = [json.loads(line) for line in (run_dir / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 21 and not any(r["error"] for r in rows)


def test_a_relative_out_is_made_absolute_at_start_so_a_plugin_that_changes_directory_does_not_break_the_end(
        tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run([sys.executable, str(REPO / "evaluate_rag.py"), "--system", f"{PLUGIN}:wanders", "--docs",
                          str(REPO / "sample_docs"), "--cases", sample_cases(tmp_path), "--out", "results-rel"],
                         cwd=work, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    run_dir = next((work / "results-rel").iterdir())
    assert (run_dir / "summary.json").exists() and json.loads((run_dir / "manifest.json").read_text())["status"] == \
        "complete"
