"""Issue #27 item 5: a reply that could not be produced or parsed is a failure of its case, never an abstention.

A server that sends only malformed, cut, refused or tool-call replies fails `behaviour`, `abstention` and `passed`
on every row, the unanswerable cases included (each reply holds an abstention-shaped answer, `{"answer": "",
"citations": []}`, which must not be read as one); the numbers of well-formed replies stay as they were; an old run
that counted such rows as abstentions is rescored by the new rule.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cases import Case
from harness.cli import main
from harness.evaluate import run_evaluation
from harness.records import SystemAnswer
from harness.rows import ScoringRules, build_row
from harness.runs import read_rows
from harness.settings import RunSettings
from tests.conftest import HANDBOOK, SAMPLE_DOCS, sample_cases
from tests.fake_ollama import ChatReply

ABSTAINS = '{"answer": "", "citations": []}'  # a well-formed abstention, hidden inside each broken reply
BROKEN = {  # name -> (backend, the chat rule's reply, a phrase of the row's answer.reasons)
    "not JSON": ("ollama", ChatReply("I could not find it. " + ABSTAINS), "reply is not JSON"),
    "fenced": ("ollama", ChatReply(f"```json\n{ABSTAINS}\n```"), "reply is not JSON"),
    "byte-order mark": ("ollama", ChatReply("\ufeff" + ABSTAINS), "reply is not JSON"),
    "unclosed think": ("ollama", ChatReply("<think>Let me look. " + ABSTAINS), "reply is not JSON"),
    "cut at num_predict": ("ollama", ChatReply(ABSTAINS, done_reason="length"), "done_reason: length"),
    "cut on the openai API": ("openai", ChatReply(ABSTAINS, done_reason="length"), "done_reason: length"),
    "tool call": ("openai", ChatReply(ABSTAINS, done_reason="tool_calls"), "called a tool instead of answering"),
    "refusal": ("openai", ChatReply("I can't help with that."), "reply is not JSON"),
}


def _settings(server, tmp_path, backend: str) -> RunSettings:
    host = server.url + "/v1" if backend == "openai" else server.url
    return RunSettings(docs=str(HANDBOOK), cases=sample_cases(tmp_path), out=str(tmp_path / "results"), host=host,
                       backend=backend)


@pytest.mark.parametrize("name", BROKEN)
def test_a_server_sending_only_broken_replies_fails_every_row_unanswerable_cases_included(server, tmp_path, name):
    backend, reply, why = BROKEN[name]
    if name == "refusal":  # content null, the text in `refusal` (tests/fake_openai.py)
        reply = ChatReply(reply.content, done_reason="refusal")
    server.chat_rule = lambda body: reply
    result = run_evaluation(_settings(server, tmp_path, backend))
    rows = read_rows(result.run_dir)
    assert len(rows) == 21 and sum(r.expected.abstain for r in rows) == 3
    for row in rows:
        assert row.answer.status == "malformed_output" and row.error is None, row.case_id  # the model's, not ours
        assert row.answer.abstained is False
        assert row.metrics["behaviour"] == row.metrics["abstention"] == row.metrics["passed"] == 0.0, row.case_id
        assert any(why in r for r in row.answer.reasons), row.answer.reasons
        assert "the system's reply was malformed" in row.failure_reasons
        assert "answered an unanswerable question" not in row.failure_reasons
    assert result.summary.mean("passed") == result.summary.mean("behaviour") == 0.0 and result.summary.errored == 0


def test_an_error_row_is_no_abstention_either():
    unanswerable = Case(id="c", question="What was the revenue?", evidence=(), facts=(), abstain=True)
    row = build_row(unanswerable, SystemAnswer(error="timeout after 300 s"), ScoringRules((1,)), elapsed_ms=1.0)
    assert row.answer.status == "error" and row.answer.abstained is False
    assert row.metrics["behaviour"] is None and row.metrics["passed"] is None  # no metrics: counted as errored


# The numbers of well-formed replies, taken from the code before a broken reply stopped counting as an abstention
# (commit 3e4de03): the offline baseline over the whole bundle (docs/evaluate.md's table) and the test server's
# default rule over the handbook. None of these rows is malformed, so the rule must not move any of them.
OFFLINE_BUNDLE = {"hit@1": 0.7099, "hit@4": 0.9259, "recall@4": 0.9198, "rr": 0.8128, "facts": 0.4599,
                  "behaviour": 0.7846, "quote_valid": 1.0, "citation_precision": 0.5744, "abstention": 0.7846,
                  "passed": 0.4564}
TEST_SERVER_HANDBOOK = {"hit@1": 0.7222, "hit@4": 1.0, "recall@4": 1.0, "rr": 0.8519, "facts": 0.75,
                        "behaviour": 0.8571, "quote_valid": 1.0, "citation_precision": 0.8571, "abstention": 0.8571,
                        "passed": 0.619}


def _means(summary, names) -> dict:
    return {n: round(summary.mean(n), 4) for n in names}


def test_the_offline_baselines_numbers_are_unchanged(tmp_path):
    result = run_evaluation(RunSettings(system="offline", out=str(tmp_path / "results")))
    assert _means(result.summary, OFFLINE_BUNDLE) == OFFLINE_BUNDLE
    assert result.summary.rows == 195 and round(0.4564 * 195) == 89  # "0.456 (89 of 195)"


def test_the_test_servers_numbers_for_well_formed_replies_are_unchanged(server, tmp_path):
    result = run_evaluation(_settings(server, tmp_path, "ollama"))
    assert not any(r.answer.status == "malformed_output" for r in read_rows(result.run_dir))
    assert _means(result.summary, TEST_SERVER_HANDBOOK) == TEST_SERVER_HANDBOOK


# Written by the code at commit 3e4de03 against the test server, every reply cut at num_predict or fenced, for 5
# handbook cases (3 unanswerable): that code scored the unanswerable ones behaviour 1 and passed 1 (0.6 of 5).
OLD_MALFORMED = Path(__file__).parent / "fixtures" / "old_runs" / "20261201T203812Z-old-malformed"


def test_an_old_run_that_counted_broken_replies_as_abstentions_rescores_by_the_new_rule(tmp_path):
    old = {r.case_id: r for r in read_rows(OLD_MALFORMED)}
    assert {r.metrics["passed"] for r in old.values() if r.expected.abstain} == {1.0}  # as it was written
    assert all(r.answer.status == "malformed_output" and r.answer.abstained for r in old.values())
    source = tmp_path / "old"
    shutil.copytree(OLD_MALFORMED, source)
    assert main(["rescore", str(source), "--cases", str(SAMPLE_DOCS / "cases.jsonl"), "--out",
                 str(tmp_path / "new")]) == 0
    (new,) = (tmp_path / "new").iterdir()
    rows = read_rows(new)
    assert len(rows) == 5 and all(r.metrics["behaviour"] == r.metrics["passed"] == 0.0 for r in rows)
    assert all("the system's reply was malformed" in r.failure_reasons for r in rows)
    summary = json.loads((new / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"]["passed"]["mean"] == 0.0
