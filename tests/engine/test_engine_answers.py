"""Engine tier (issue #28, f and g): what a real small model writes, through the commands that read it. Two runs of
the same two cases with the same settings (repeatability), then `rag-eval judge` over the first and `rag-eval
draft` of one page. Contracts only: whatever the model writes is stored or refused by the documented rules and the
command exits with one of its documented codes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.drafting.records import KINDS, read_drafts
from harness.runs import read_rows
from tests.conftest import HANDBOOK, SAMPLE_DOCS
from tests.engine.cli_runs import ROOT, SMALL, run_argv
from tests.engine.engine import chat_settings
from tests.engine.servers import Server

pytestmark = pytest.mark.engine

VERDICTS = {"supported", "unsupported", "contradicted", "unverified"}  # docs/judge.md


@pytest.fixture(scope="module")
def two_runs(engine, engine_logs, embed_server, run_cache, tmp_path_factory) -> Iterator[tuple[Path, Path, Path]]:
    """(run A, run B, cases file): the first two handbook cases answered twice with the same settings, one at a
    time, by a 2-slot server that does not reuse cached prompts (`--no-cache-prompt`)."""
    base = tmp_path_factory.mktemp("two-runs")
    cases = base / "cases.jsonl"
    cases.write_bytes((SAMPLE_DOCS / "cases.jsonl").read_bytes())
    dirs = []
    with Server(engine.server, chat_settings(engine, extra=("--jinja", "--no-cache-prompt")), engine_logs) as chat:
        for label in ("a", "b"):
            out = base / label
            code = main(["run", *run_argv(chat, embed_server, str(cases), out, run_cache, "--limit", "2",
                                          "--num-predict", "128")])
            assert code in (0, 1), code  # 1: no case passed
            (run_dir,) = out.iterdir()
            dirs.append(run_dir)
        yield dirs[0], dirs[1], cases


def test_two_runs_with_the_same_settings_give_the_same_answers(two_runs):
    """Contract (g): temperature 0 and a fixed seed, one case at a time, and a server that evaluates every prompt
    afresh: the same raw replies, statuses and token counts in both runs. What breaks this on llama.cpp (measured,
    docs/backends.md): its prompt cache (on by default: a prompt seen before is answered from reused KV, and a
    reply may differ), and two requests in the slots at once."""
    first, second = (read_rows(run_dir) for run_dir in two_runs[:2])
    assert [r.key for r in first] == [r.key for r in second]
    assert [r.answer.raw for r in first] == [r.answer.raw for r in second]
    assert [r.answer.status for r in first] == [r.answer.status for r in second]
    assert [r.usage.get("output_tokens") for r in first] == [r.usage.get("output_tokens") for r in second]


def test_the_judge_stores_what_the_model_writes_by_the_documented_rules(two_runs, chat_server, tmp_path):
    """Contract (f): `rag-eval judge` with the real model exits 0, or 1 when every answer failed; each answer is
    either a review whose verdicts are the documented ones, or an error entry in judge.json. Over the engine's run
    (whose cut replies may leave nothing to judge) and over an offline run of one case, whose quoted answer the
    model must judge (at least one chat call)."""
    _, _, cases = two_runs
    offline = tmp_path / "offline"
    assert main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", str(cases), "--limit", "1", "--out",
                 str(offline), "--cache-dir", str(tmp_path / "cache"), *SMALL]) in (0, 1)
    (offline_run,) = offline.iterdir()
    for run_dir in (two_runs[0], offline_run):
        reviews = run_dir.parent / "reviews.jsonl"
        code = main(["judge", str(run_dir), "--backend", "openai", "--host", chat_server.base_url, "--model",
                     "smollm2", "--num-predict", "256", "--reviews", str(reviews), "--cache-dir",
                     str(tmp_path / "cache")])
        judged = json.loads((run_dir / "judge.json").read_text())
        stored = [json.loads(line) for line in reviews.read_text().splitlines()] if reviews.exists() else []
        for review in stored:
            assert review["reviewer"].startswith("judge:smollm2@")
            assert {claim["verdict"] for claim in review["claims"]} <= VERDICTS, review
        answered = {r.case_id for r in read_rows(run_dir) if r.error is None and r.answer.model_answer.strip()}
        errored = {e["case_id"] for e in judged["errors"]}
        assert {r["case_id"] for r in stored} | errored <= answered
        assert all(e["error"] for e in judged["errors"])
        assert code == (1 if errored and not stored else 0), code
    assert judged["chat_calls"] >= 1 and (stored or errored)  # the offline run's answer went to the model


def _documented_reasons() -> set[str]:
    """The reason codes of docs/drafting.md's table of checks."""
    section = (ROOT / "docs" / "drafting.md").read_text().split("## Checks", 1)[1]
    table = next(block for block in section.split("\n\n") if block.startswith("| reason"))
    return {code for row in table.splitlines()[2:] for code in re.findall(r"`([a-z_]+)`", row.split("|")[1])}


def test_drafting_one_page_stores_drafts_or_errors_by_the_documented_rules(chat_server, embed_server, tmp_path):
    """Contract (f): `rag-eval draft` of one page with the real model exits 0 or 1 (every page failed); every
    entry is a draft whose failed checks are reasons of docs/drafting.md's table, or an error entry with the
    reason, for that page."""
    out = tmp_path / "drafts.jsonl"
    code = main(["draft", "--docs", str(HANDBOOK), "--out", str(out), "--pages", "handbook.pdf#p1",
                 "--per-page", "1", "--no-parametric", "--backend", "openai", "--host", chat_server.base_url,
                 "--embed-host", embed_server.base_url, "--chat-model", "smollm2", "--embed-model", "gemma-embed",
                 "--num-predict", "256", "--cache-dir", str(tmp_path / "cache")])
    drafts = read_drafts(out)
    assert drafts and code == (1 if all(d.kind == "error" for d in drafts) else 0), code
    documented = _documented_reasons()
    assert "quote_not_found" in documented and "draft_error" in documented
    for draft in drafts:
        assert draft.kind in KINDS and draft.source_id == "handbook.pdf#p1"
        if draft.kind == "error":
            assert draft.error
            continue
        assert {r.code for r in draft.verification.reasons} <= documented, draft.verification.reasons
        assert draft.verification.passed == (not draft.verification.reasons)
