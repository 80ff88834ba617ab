"""The regression gate: `rag-eval compare --fail-if-worse` (exit 5), the sweep's `--fail-if-worse`, runs found by
label, and `rag-eval run --rerun-failed`. Runs go through the real path against the test server, whose chat rule
each test states (it is not a model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.cli import main
from harness.cli.compare import EXIT_WORSE
from harness.runs import read_manifest, read_rows
from tests.conftest import REPO, SAMPLE_DOCS
from tests.fake_ollama import overlap_rule

PROMPT = (REPO / "chatbot" / "prompts" / "default.txt").read_text(encoding="utf-8")
MARK = "Answer in one sentence."  # what the second prompt adds; the rule below keys on it


@pytest.fixture
def setup(tmp_path):
    """40 cases of the bundle, the default prompt (v1) and a changed one (v2)."""
    cases = tmp_path / "cases.jsonl"
    lines = (SAMPLE_DOCS / "all_cases.jsonl").read_text(encoding="utf-8").splitlines()[:40]
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    v1, v2 = tmp_path / "v1.txt", tmp_path / "v2.txt"
    v1.write_text(PROMPT, encoding="utf-8")
    v2.write_text(PROMPT.replace("Passages:", f"{MARK}\n\nPassages:"), encoding="utf-8")
    return cases, v1, v2


def _run(server, tmp_path, cases, prompt, label, *extra):
    return main(["run", "--host", server.url, "--docs", str(SAMPLE_DOCS), "--cases", str(cases), "--prompt",
                 str(prompt), "--label", label, "--out", str(tmp_path / "results"), "--retriever", "bm25", *extra])


def _question(body: dict) -> str:
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return content.rsplit("Question:", 1)[-1].strip()


def _fails_under_v2(broken: set[str]):
    """The chat rule: under the second prompt, the questions in `broken` get an empty answer (a refusal);
    everything else as `overlap_rule`."""
    def rule(body: dict) -> dict:
        content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        if MARK in content and _question(body) in broken:
            return {"answer": "", "citations": []}
        return overlap_rule(body)
    return rule


def _compare(*args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())", "compare"]
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=300)


def test_a_prompt_change_that_breaks_10_of_40_cases_fails_the_gate(server, tmp_path, setup):
    cases, v1, v2 = setup
    assert _run(server, tmp_path, cases, v1, "before") == 0
    before = read_rows(next((tmp_path / "results").iterdir()))
    passing = [r.question for r in before if r.metrics["passed"] == 1.0 and not r.expected.abstain]
    assert len(before) == 40 and len(passing) >= 10
    server.chat_rule = _fails_under_v2(set(passing[:10]))
    assert _run(server, tmp_path, cases, v2, "after") == 0
    out = str(tmp_path / "results")
    # by label, in a real process: the exit code is what CI sees
    result = _compare("before", "after", "--out", out, "--fail-if-worse", "passed")
    assert result.returncode == EXIT_WORSE == 5, result.stderr
    assert "A: label 'before':" in result.stderr and "(the latest of 1 run(s) with that label" in result.stderr
    assert "gate: B is significantly worse than A on passed delta -0.250" in result.stderr
    assert "10 cases worse" in result.stderr
    assert "broke (10):" in result.stdout
    # the other way round B is better: the gate passes; a metric that did not move passes too
    assert _compare("after", "before", "--out", out, "--fail-if-worse", "passed").returncode == 0
    assert _compare("before", "after", "--out", out, "--fail-if-worse", "hit@4").returncode == 0
    unknown = _compare("before", "after", "--out", out, "--fail-if-worse", "passd")
    assert unknown.returncode == 2 and "--fail-if-worse: passd is not a metric of both runs" in unknown.stderr
    data = json.loads(_compare("before", "after", "--out", out, "--fail-if-worse", "passed,facts", "--json").stdout)
    assert data["gate"]["worse"][0] == "passed" and data["gate"]["exit_code"] == 5


def test_compare_by_label_picks_the_latest_run_and_says_so(tmp_path, capsys):
    from tests.stats.test_compare import _run as loaded
    from tests.support.rowkit import make_row
    out = tmp_path / "results"
    for name, label, started in (("20260101T000000Z-x", "x", "2026-01-01T00:00:00Z"),
                                 ("20260102T000000Z-x", "x", "2026-01-02T00:00:00Z"),
                                 ("20260101T000000Z-y", "y", "2026-01-01T00:00:00Z")):
        run = loaded(name, [make_row("c1", {"hit@1": 1.0, "facts": 1.0})])
        (out / name).mkdir(parents=True)
        manifest = run.manifest.model_copy(update={"settings": {"label": label}, "started_at": started})
        (out / name / "manifest.json").write_text(json.dumps(manifest.to_json()))
        (out / name / "rows.jsonl").write_text(run.rows[0].line() + "\n")
    assert main(["compare", "x", "y", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"A: label 'x': {out / '20260102T000000Z-x'} (the latest of 2 run(s) with that label" in err
    assert main(["compare", "x", "nope", "--out", str(out)]) == 2
    assert "nope: not a run directory, and no run in" in capsys.readouterr().err


def test_rerun_failed_asks_only_the_errored_cases_again(server, tmp_path, setup):
    cases, v1, _ = setup
    lines = cases.read_text().splitlines()[:8]
    cases.write_text("\n".join(lines) + "\n")
    flaky = {json.loads(line)["question"] for line in lines[:3]}
    asked: list[str] = []

    def down_for_some(body: dict) -> dict:
        asked.append(_question(body))
        if _question(body) in flaky:
            raise RuntimeError("model crashed")  # the server answers 500: an error row
        return overlap_rule(body)

    server.chat_rule = down_for_some
    _run(server, tmp_path, cases, v1, "first")
    first = next((tmp_path / "results").iterdir())
    assert sum(r.errored for r in read_rows(first)) == 3
    asked.clear()
    server.chat_rule = lambda body: (asked.append(_question(body)), overlap_rule(body))[1]
    assert main(["run", "--rerun-failed", str(first), "--host", server.url]) == 0
    second = max((tmp_path / "results").iterdir())
    assert second != first
    assert sorted(q for q in asked if q) == sorted(flaky)  # only the errored cases were asked again
    rows = read_rows(second)
    assert len(rows) == 8 and not any(r.errored for r in rows)
    assert read_manifest(second).rerun_of.to_json() == {"run": str(first), "carried": 5}
    assert main(["run", "--rerun-failed", str(second), "--host", server.url]) == 2  # nothing errored
    assert main(["run", "--rerun-failed", str(first), "--resume", str(first)]) == 2  # one or the other


def test_sweep_fail_if_worse(server, tmp_path, setup, capsys):
    cases, v1, v2 = setup
    server.chat_rule = _fails_under_v2({json.loads(line)["question"] for line in cases.read_text().splitlines()})
    args = ["sweep", "--grid", f"prompt={v1},{v2}", "--host", server.url, "--docs", str(SAMPLE_DOCS), "--cases",
            str(cases), "--out", str(tmp_path / "s"), "--retriever", "bm25", "--k", "1"]
    assert main([*args, "--fail-if-worse"]) == EXIT_WORSE
    assert "gate: significantly worse than the baseline" in capsys.readouterr().err
    assert main(args) == 0  # without the flag a worse cell is a finding, not a failure
