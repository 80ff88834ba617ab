"""`rag-eval judge`: verdicts of a scripted judge (tests/support/judge_rules.py, against the test server) stored as
a reviewer's, validated like citations, cached, and kept apart from the human claim metrics."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.review.store import read_reviews
from harness.runs import read_json, read_rows
from harness.settings import RunSettings
from tests.support.judge_rules import judge_rule

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_docs"
PROMPT_SHA = hashlib.sha256((REPO / "harness/prompts/judge.txt").read_bytes()).hexdigest()
# the test server's digest of a model is the SHA-256 of its name
JUDGE = "judge:qwen3:4b@" + hashlib.sha256(b"qwen3:4b").hexdigest()[:12]


@pytest.fixture
def run_dir(tmp_path) -> Path:
    """The offline baseline over the handbook (no model server): extractive one-sentence answers."""
    cases = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE / "cases.jsonl", cases)
    settings = RunSettings(system="offline", out=str(tmp_path / "runs"), label="a", docs=str(SAMPLE / "handbook.pdf"),
                           cases=str(cases))
    return run_evaluation(settings).run_dir


def answered(run: Path) -> list:
    return [r for r in read_rows(run) if r.answer.model_answer]


def judge(run: Path, server, *extra: str) -> int:
    return main(["judge", str(run), "--host", server.url, *extra])


def test_verdicts_stored_under_the_judge_name_one_call_per_answer(run_dir, server, capsys):
    server.chat_rule = judge_rule()
    assert judge(run_dir, server) == 0
    rows = answered(run_dir)
    calls = server.chat_bodies()
    assert len(calls) == len(rows)  # one chat call per judged answer, all its claims at once
    body = calls[0]
    assert body["options"]["temperature"] == 0 and body["options"]["seed"] == 42 and body["stream"] is False
    assert body["format"]["properties"]["verdicts"]["minItems"] == 1
    prompt = body["messages"][-1]["content"]  # every retrieved passage, not only the cited one
    assert prompt.count("[source: ") == len(rows[0].retrieved) > 1 and prompt.count("(cited)") == 1
    book = read_reviews(run_dir.parent.parent / "cases.reviews.jsonl")
    reviews = [r for r in book.reviews.values()]
    assert {r.reviewer for r in reviews} == {JUDGE}
    assert {r.prompt_sha256 for r in reviews} == {PROMPT_SHA}
    # the extractive answer is a sentence of its passage: the rule finds it and quotes it, so it validates
    first = book.judge_review((rows[0].case_id, rows[0].answer.answer_sha256), JUDGE)
    assert first.claims[0].verdict == "supported" and first.claims[0].quote
    manifest = read_json(run_dir / "manifest.json")
    assert manifest["judge"]["reviewer"] == JUDGE and manifest["judge"]["prompt_sha256"] == PROMPT_SHA
    assert JUDGE in capsys.readouterr().out


def test_supported_with_an_invented_quote_becomes_unverified(run_dir, server):
    rows = answered(run_dir)
    claim = rows[0].answer.model_answer.strip()
    server.chat_rule = judge_rule({claim: ("supported", "Employees may fly first class on every trip abroad.")})
    assert judge(run_dir, server) == 0
    row = next(r for r in read_rows(run_dir) if r.case_id == rows[0].case_id)
    verdict = row.judged_claims[0]
    assert verdict.judge_verdict == "unverified" and verdict.verdict == "unverified" and verdict.by == "judge"
    assert "quote does not occur" in verdict.reason
    assert row.metrics["claims_supported_judged"] == 0.0  # unverified never counts as supported


def test_human_metrics_unchanged_by_the_judge_judged_metrics_filled(run_dir, server):
    before = read_json(run_dir / "summary.json")
    server.chat_rule = judge_rule()
    assert judge(run_dir, server) == 0
    after = read_json(run_dir / "summary.json")
    assert after["metrics"]["claims_supported"] == before["metrics"]["claims_supported"]
    assert after["metrics"]["claims_supported"]["scored"] == 0  # nobody reviewed: still pending
    assert after["human_claim_review"] == before["human_claim_review"]
    judged = after["metrics"]["claims_supported_judged"]
    assert judged["scored"] == len({(r.case_id) for r in answered(run_dir)}) and judged["mean"] is not None
    assert all(r.metrics["claims_supported"] is None for r in read_rows(run_dir))


def test_a_rerun_makes_no_chat_call(run_dir, server):
    server.chat_rule = judge_rule()
    assert judge(run_dir, server) == 0
    first = len(server.chat_bodies())
    assert judge(run_dir, server) == 0
    assert len(server.chat_bodies()) == first  # every reply came from the cache


def test_progress_counts_what_came_from_the_cache(run_dir, server):
    from harness.judge.run import JudgeSettings, judge_run
    server.chat_rule = judge_rule()
    reviews, settings = run_dir / "reviews.jsonl", JudgeSettings(host=server.url)
    seen: list[tuple[int, int, int]] = []
    judge_run(run_dir, reviews, settings, progress=lambda *update: seen.append(update))
    n = len(answered(run_dir))
    assert seen[-1] == (n, n, 0) and all(cached == 0 for _, _, cached in seen)  # a first run: nothing cached
    seen.clear()
    judge_run(run_dir, reviews, settings, progress=lambda *update: seen.append(update))
    assert seen == [(i, n, i) for i in range(0, n + 1)]  # the start (0 done), then every answer from the cache


def test_a_failed_answer_is_an_error_entry_and_a_rerun_resumes_it(run_dir, server, capsys):
    server.chat_rule = judge_rule()
    server.break_next("not_json")
    assert judge(run_dir, server) == 0
    log = read_json(run_dir / "judge.json")
    assert len(log["errors"]) == 1 and "bad reply" in log["errors"][0]["error"]
    assert "not judged" in capsys.readouterr().err
    calls = len(server.chat_bodies())
    assert judge(run_dir, server) == 0
    assert len(server.chat_bodies()) == calls + 1  # only the failed answer is asked again
    assert read_json(run_dir / "judge.json")["errors"] == []


def test_malformed_reply_and_dead_server(run_dir, server, capsys):
    server.chat_rule = lambda body: {"verdicts": []}  # matches no schema: every answer malformed
    assert judge(run_dir, server) == 1  # nothing judged at all
    errors = read_json(run_dir / "judge.json")["errors"]
    assert len(errors) == len(answered(run_dir)) and "malformed output" in errors[0]["error"]


def test_dry_run_counts_calls(run_dir, server, capsys):
    server.chat_rule = judge_rule()
    n = len(answered(run_dir))
    assert judge(run_dir, server, "--dry-run") == 0
    assert f"{n} chat call(s) needed, 0 answer(s) already in the cache" in capsys.readouterr().out
    assert server.chat_bodies() == []
    assert judge(run_dir, server) == 0
    assert judge(run_dir, server, "--dry-run") == 0
    assert f"0 chat call(s) needed, {n} answer(s) already in the cache" in capsys.readouterr().out


def test_a_prompt_without_the_variables_is_refused(run_dir, server, tmp_path, capsys):
    bad = tmp_path / "p.txt"
    bad.write_text("Judge $question only", encoding="utf-8")
    assert judge(run_dir, server, "--prompt", str(bad)) == 2
    assert "$answer, $claims, $passages" in capsys.readouterr().err


def test_a_changed_answer_is_judged_again_the_rest_from_the_cache(run_dir, server):
    from harness.rows import answer_sha256
    from harness.runs import write_rows
    server.chat_rule = judge_rule()
    assert judge(run_dir, server) == 0
    calls = len(server.chat_bodies())
    rows = read_rows(run_dir)
    first = next(i for i, r in enumerate(rows) if r.answer.model_answer)
    changed = rows[first].answer.model_answer + " Breakfast is extra."
    answer = rows[first].answer.model_copy(update={"model_answer": changed, "answer_sha256": answer_sha256(changed)})
    rows[first] = rows[first].model_copy(update={"answer": answer})
    write_rows(run_dir, rows)
    assert judge(run_dir, server) == 0
    assert len(server.chat_bodies()) == calls + 1
    assert "Breakfast is extra." in server.chat_bodies()[-1]["messages"][-1]["content"]


def test_a_dropped_connection_fails_that_answer_only(run_dir, server):
    server.chat_rule = judge_rule()
    server.drop_next(1, path="/api/chat")
    assert judge(run_dir, server, "--retries", "0") == 0
    errors = read_json(run_dir / "judge.json")["errors"]
    assert len(errors) == 1 and "dropped the connection" in errors[0]["error"]
    book = read_reviews(run_dir.parent.parent / "cases.reviews.jsonl")
    assert len(book.reviews) == len({(r.case_id, r.answer.answer_sha256) for r in answered(run_dir)}) - 1


def test_timeouts_are_error_entries_and_the_command_goes_on(run_dir, server, capsys):
    server.chat_rule = judge_rule()
    server.delay_s = 1.0
    assert judge(run_dir, server, "--timeout", "0.2", "--retries", "0") == 1  # not one answer judged
    errors = read_json(run_dir / "judge.json")["errors"]
    assert len(errors) == len({(r.case_id, r.answer.answer_sha256) for r in answered(run_dir)})
    assert all("took longer than 0.2 s" in e["error"] for e in errors)


def test_the_judge_speaks_the_openai_compatible_api_too(run_dir, server):
    server.chat_rule = judge_rule()  # the test server answers /v1/chat/completions by the same rule
    assert main(["judge", str(run_dir), "--backend", "openai", "--host", server.url + "/v1"]) == 0
    paths = {r.path for r in server.requests}
    assert "/v1/chat/completions" in paths and "/api/chat" not in paths
    manifest = read_json(run_dir / "manifest.json")
    assert manifest["judge"]["reviewer"].startswith("judge:qwen3:4b@") and manifest["judge"]["host"].endswith("/v1")
    judged = [r for r in read_rows(run_dir) if r.judged_claims]
    assert len(judged) == len(answered(run_dir))


def test_the_judge_takes_the_runs_server_as_well_as_its_backend(server, tmp_path, monkeypatch):
    """A run against one server, judged with no --host: the run's server (and API) answers, not $OLLAMA_HOST's
    default; another --backend than the run's does not take the run's host (issue #44)."""
    cases = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE / "cases.jsonl", cases)
    settings = RunSettings(backend="openai", host=server.url + "/v1", out=str(tmp_path / "runs"), label="b",
                           docs=str(SAMPLE / "handbook.pdf"), cases=str(cases), limit=3)
    run = run_evaluation(settings).run_dir
    assert answered(run)
    server.chat_rule = judge_rule()
    server.requests.clear()
    assert main(["judge", str(run), "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "/v1/chat/completions" in {r.path for r in server.requests}
    assert read_json(run / "manifest.json")["judge"]["host"] == server.url + "/v1"
    import socket
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{closed.getsockname()[1]}")
    server.requests.clear()
    assert main(["judge", str(run), "--backend", "ollama", "--cache-dir", str(tmp_path / "other")]) == 1
    assert server.requests == []  # $OLLAMA_HOST (where nothing listens), not the run's OpenAI-compatible server


def test_the_standalone_test_server_takes_the_judge_rule_for_runs_by_hand(run_dir, tmp_path):
    """`python -m tests.fake_ollama --rule 'tests.support.judge_rules:judge_rule()'`, as docs/judge.md shows for
    trying the command without a model: the judge's replies parse and every answer is judged."""
    import subprocess
    import sys
    server = subprocess.Popen([sys.executable, "-m", "tests.fake_ollama", "--port", "0", "--rule",
                               "tests.support.judge_rules:judge_rule()"], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        banner = server.stdout.readline()
        url = banner.split("OLLAMA_HOST=")[1].strip()
        assert main(["judge", str(run_dir), "--host", url, "--cache-dir", str(tmp_path / "cache")]) == 0
    finally:
        server.terminate()
        server.wait()
    judged = read_json(run_dir / "judge.json")
    assert judged["errors"] == [] and judged["chat_calls"] == len(answered(run_dir))


def test_a_six_megabyte_quote_is_invalid_and_the_reviews_file_stays_small(run_dir, server):
    # Issue #27 item 6: the judge "supports" every claim with a 6 MB quote (one "token" to the test server, which
    # would cut a reply of more than --num-predict whitespace tokens).
    huge = "Hotel-costs-are-reimbursed-up-to-EUR-160-per-night,-including-breakfast." * 85_000
    assert len(huge) > 6_000_000
    scripted = judge_rule()
    server.chat_rule = lambda body: {"verdicts": [v | {"verdict": "supported", "quote": huge}
                                                  for v in scripted(body)["verdicts"]]}
    rows_before = (run_dir / "rows.jsonl").stat().st_size
    assert judge(run_dir, server) == 0
    reviews = run_dir.parent.parent / "cases.reviews.jsonl"
    claims = [c for r in read_reviews(reviews).reviews.values() for c in r.claims]
    assert len(claims) >= len(answered(run_dir))
    assert all(c.verdict == "unverified" and "more than the passage it names" in c.note for c in claims)
    assert all(len(c.quote) == 5_000 and c.quote.endswith(f"[cut: {len(huge):,} characters in all]") for c in claims)
    assert reviews.stat().st_size < 6_000 * len(claims)  # the bounded fields, never the quote whole
    assert (run_dir / "rows.jsonl").stat().st_size < rows_before + 6_000 * len(claims)  # judged claims: the same
    assert (run_dir / "judge.json").stat().st_size < 10_000
