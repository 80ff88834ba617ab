"""Faults during a run, using the test server's fault modes. Chat rule: overlap_rule unless stated."""

import json

from hypothesis import given
from hypothesis import strategies as st

from chatbot.citations import validate_citation
from chatbot.index import Hit
from harness.evaluate import run_evaluation
from harness.runs import read_rows
from harness.settings import RunSettings
from pdfrag.chunking import Chunk
from pdfrag.text import normalize
from tests.conftest import HANDBOOK, SAMPLE_DOCS, sample_cases


def settings_for(server, tmp_path, **kw):
    return RunSettings(**({"docs": str(HANDBOOK), "cases": sample_cases(tmp_path),
                           "out": str(tmp_path / "results"), "host": server.url} | kw))


def test_503_storm_is_retried_and_recorded_on_the_row(server, tmp_path):
    server.fail_next(503, count=2, path="/api/chat")
    rows = read_rows(run_evaluation(settings_for(server, tmp_path, backoff=0.01)).run_dir)
    assert rows[0].usage["retries"] == 2 and rows[0].error is None
    assert all(r.usage["retries"] == 0 for r in rows[1:])


def test_slow_reply_past_the_timeout_is_that_cases_error(server, tmp_path):
    calls = {"n": 0}

    def slow_second(body):  # rule: overlap_rule, but the second chat call takes 2 s
        calls["n"] += 1
        if calls["n"] == 2:
            import time
            time.sleep(2)
        from tests.fake_ollama import overlap_rule
        return overlap_rule(body)

    server.chat_rule = slow_second
    result = run_evaluation(settings_for(server, tmp_path, timeout=1.0))
    rows = read_rows(result.run_dir)
    assert rows[1].answer.status == "error" and "took longer than 1 s" in rows[1].error
    assert rows[1].failure_reasons[0].startswith("error:")
    assert all(v is None for v in rows[1].metrics.values())
    assert [r.error for i, r in enumerate(rows) if i != 1] == [None] * (len(rows) - 1)
    assert result.summary.metrics["behaviour"].errored == 1


def test_malformed_reply_for_one_case_is_not_the_runs(server, tmp_path):
    # Rule: the third chat reply is not JSON, every other one follows overlap_rule.
    calls = {"n": 0}

    def third_broken(body):
        calls["n"] += 1
        from tests.fake_ollama import overlap_rule
        return "{not json" if calls["n"] == 3 else overlap_rule(body)

    server.chat_rule = third_broken
    rows = read_rows(run_evaluation(settings_for(server, tmp_path)).run_dir)
    assert rows[2].answer.status == "malformed_output" and rows[2].answer.raw == "{not json"
    assert sum(r.answer.status == "malformed_output" for r in rows) == 1


def test_server_error_status_for_one_case_is_an_error_row(server, tmp_path):
    server.fail_next(500, count=1, error="llama runner process has terminated", path="/api/chat")
    rows = read_rows(run_evaluation(settings_for(server, tmp_path)).run_dir)
    assert rows[0].answer.status == "error" and "HTTP 500" in rows[0].error
    assert rows[1].error is None


def test_connection_dropped_for_good_stops_the_run_resumably(server, tmp_path, capsys):
    from harness.cli import main
    server.drop_next(count=10_000, path="/api/chat")
    code = main(["run", "--host", server.url, "--docs", str(HANDBOOK), "--cases", str(SAMPLE_DOCS / "cases.jsonl"),
                 "--out", str(tmp_path / "r"), "--retries", "1", "--backoff", "0.01"])
    err = capsys.readouterr().err
    assert code == 1 and "dropped the connection" in err and "rag-eval run --resume" in err
    [run_dir] = (tmp_path / "r").iterdir()
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "incomplete"
    assert read_rows(run_dir) == []
    server.reset()  # the server is back: resuming takes every saved setting from the run's manifest
    assert main(["run", "--resume", str(run_dir)]) == 0
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
    assert len(read_rows(run_dir)) == 21


def test_repeat_reports_flips(server, tmp_path):
    # Rule: the first reply to each question follows overlap_rule; later ones give no answer.
    seen = set()

    def flaky(body):
        from tests.fake_ollama import overlap_rule
        question = body["messages"][-1]["content"].rsplit("Question:", 1)[-1]
        first = question not in seen
        seen.add(question)
        return overlap_rule(body) if first else {"answer": "", "citations": []}

    server.chat_rule = flaky
    result = run_evaluation(settings_for(server, tmp_path, repeat=2))
    rows = read_rows(result.run_dir)
    assert [r.key for r in rows[:2]] == [(rows[0].case_id, 0), (rows[0].case_id, 1)]
    stability = result.summary.repeat_stability["behaviour"]
    answered_first = sum(1 for r in rows if r.repeat == 0 and r.answer.status == "answered")
    assert stability["flipped"] == answered_first and stability["cases"] == len(rows) // 2


PASSAGE = Hit(1, 1.0, Chunk("d.pdf#p1", "d.pdf", 1, 0, 60, "Hotel costs are reimbursed up to EUR 160 per night."))
OTHER = Hit(2, 0.5, Chunk("d.pdf#p2", "d.pdf", 2, 0, 40, "Meals are paid up to EUR 45 per day."))


@given(st.text(max_size=60), st.sampled_from(["d.pdf#p1", "d.pdf#p2", "d.pdf#p3"]), st.integers(1, 6))
def test_a_valid_citation_always_quotes_its_own_retrieved_passage(quote, source_id, min_words):
    result = validate_citation(source_id, quote, [PASSAGE, OTHER], min_words=min_words)
    passage = {"d.pdf#p1": PASSAGE, "d.pdf#p2": OTHER}.get(source_id)
    if result.valid:
        assert passage is not None and result.reason is None
        assert normalize(quote).casefold() in normalize(passage.chunk.text).casefold()
        assert len(normalize(quote).split()) >= min_words
    else:
        assert result.reason


@given(st.integers(0, 8), st.integers(0, 8))
def test_every_long_enough_substring_of_the_passage_is_valid(start, length):
    words = PASSAGE.chunk.text.split()
    quote = " ".join(words[start:start + length])
    result = validate_citation("d.pdf#p1", quote.upper(), [PASSAGE, OTHER], min_words=4)
    assert result.valid == (len(quote.split()) >= 4)


def test_a_killed_process_resumes_to_the_same_rows(server, tmp_path):
    """SIGKILL the real command mid-run, resume it, and compare with an uninterrupted run (overlap_rule)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    cases = sample_cases(tmp_path)
    full = read_rows(run_evaluation(settings_for(server, tmp_path, cases=cases, out=str(tmp_path / "full"))).run_dir)
    server.hold_after = server.chats_answered + 5  # its sixth answer waits until it is killed: half-way
    env = os.environ | {"PDF_RAG_EVAL_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, str(REPO / "evaluate_rag.py"), "--host", server.url, "--cases", cases,
               "--docs", str(HANDBOOK), "--out", str(tmp_path / "killed")]
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    rows_file = None
    while time.monotonic() < deadline:
        found = list((tmp_path / "killed").glob("*/rows.jsonl"))
        if found and found[0].read_text().count("\n") >= 5:
            rows_file = found[0]
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert rows_file is not None
    run_dir = rows_file.parent
    written = len(read_rows(run_dir))
    assert 5 <= written < len(full)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "incomplete"
    server.hold_after = None
    server.release()
    done = subprocess.run([sys.executable, str(REPO / "evaluate_rag.py"), "--resume", str(run_dir)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    resumed = read_rows(run_dir)
    assert [r.case_id for r in resumed] == [r.case_id for r in full]
    strip = lambda rows: [r.model_copy(update={"usage": {}}) for r in rows]  # noqa: E731
    assert strip(resumed) == strip(full)
