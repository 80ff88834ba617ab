"""The model-server boundary holds like the system boundary (issue #27 items 1-4), for both backends, against the
test server's wire faults (tests/fake_ollama.py `WIRE_FAULTS`): a reply dripped a byte every 0.5 s (body or
headers) ends at `--timeout`; a 307 is not followed and its Location is named; a reply far over `--max-body-bytes`
is refused without being read (the memory it costs is measured in a child process); embedding replies whose items
are numbered wrongly, or whose vectors are constant, are refused and nothing is cached."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest

from chatbot.bot import open_chatbot
from harness.evaluate import run_evaluation
from harness.runs import read_rows
from harness.settings import RunSettings
from pdfrag.backends import connect
from pdfrag.errors import BadReply
from pdfrag.model_server import ClientSettings
from pdfrag.openai_client import OpenAIClient
from pdfrag.openai_replies import INDEXED, LISTED
from tests.conftest import HANDBOOK, REPO, sample_cases
from tests.fake_ollama import FakeOllama
from tests.support.judge_rules import judge_rule
from tests.support.memory import peak_rss

BACKENDS = {"ollama": "", "openai": "/v1"}
QUESTION = "What is the hotel reimbursement limit per night?"


def _client(server: FakeOllama, backend: str, **kw) -> ClientSettings:
    return ClientSettings(host=server.url + BACKENDS[backend], backend=backend, retries=0, **kw)


def _run(tmp_path, server: FakeOllama, backend: str, **kw) -> RunSettings:
    return RunSettings(docs=str(HANDBOOK), cases=sample_cases(tmp_path), out=str(tmp_path / "runs"), limit=1,
                       host=server.url + BACKENDS[backend], backend=backend, retries=0, **kw)


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("fault", ["drip_body", "drip_headers"])
def test_a_reply_dripped_a_byte_at_a_time_ends_at_the_timeout(server, backend, fault):
    bot = open_chatbot(docs=HANDBOOK, client_settings=_client(server, backend, timeout_s=3.0))
    server.wire_fault = fault  # one byte every 0.5 s, without end: socket timeouts alone would never fire
    started = time.monotonic()
    answer = bot.ask(QUESTION)
    took = time.monotonic() - started
    assert answer.status == "error" and "took longer than 3 s" in (answer.error or "")
    assert took <= 3.0 + 2.0, f"{fault} on {backend} held the case {took:.1f} s at --timeout 3"


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_redirect_is_not_followed_and_the_row_names_its_location(tmp_path, server, backend):
    with FakeOllama(host="127.0.0.2") as elsewhere:
        server.wire_fault, server.redirect_to = "redirect", elsewhere.url + BACKENDS[backend] + "/chat"
        result = run_evaluation(_run(tmp_path, server, backend))
        [row] = read_rows(result.run_dir)
        assert row.error is not None and "a redirect to" in row.error and repr(server.redirect_to) in row.error
        assert "not followed" in row.error and "point --host at the server itself" in row.error
        assert elsewhere.requests == []  # the prompt and the passages never reached the other host


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_reply_over_the_body_cap_is_refused_as_that_cases_error(tmp_path, server, backend):
    server.wire_fault, server.huge_bytes = "huge", 20_000_000
    result = run_evaluation(_run(tmp_path, server, backend, max_body_bytes=1_000_000))
    [row] = read_rows(result.run_dir)
    assert row.error is not None and "the body passed 1,000,000 bytes (decoded)" in row.error
    assert "--max-body-bytes 1,000,000" in row.error


def _peak_rss_mb(args: list[str], env: dict) -> float:
    peak = peak_rss([sys.executable, "-m", "harness.cli", *args], cwd=REPO, env=env)
    assert peak.returncode in (0, 1, 4), peak.stderr  # 4: every row errored; 1: no answer could be judged
    return peak.mb


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_300_mb_reply_costs_the_cap_not_its_size(tmp_path, server, backend):
    """The run that gets a 300 MB reply peaks within the 10 MB cap (and its copies) of the same run with an
    ordinary reply: the body is refused as it is read, never held."""
    env = os.environ | {"PYTHONPATH": str(REPO)}
    args = ["run", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--limit", "1", "--retries", "0",
            "--backend", backend, "--host", server.url + BACKENDS[backend]]
    ordinary = _peak_rss_mb([*args, "--out", str(tmp_path / "a")], env)
    server.wire_fault = "huge"  # 300 MB
    huge = _peak_rss_mb([*args, "--out", str(tmp_path / "b")], env)
    [row] = read_rows(next((tmp_path / "b").iterdir()))
    assert row.error is not None and "the body passed 10,000,000 bytes" in row.error
    assert huge - ordinary < 60, f"{backend}: {huge:.0f} MB peak with a 300 MB reply, {ordinary:.0f} MB without"


@pytest.mark.parametrize("numbering", ["missing", "string", "all_zero", "duplicate"])
def test_embedding_items_numbered_wrongly_are_refused_and_nothing_is_cached(tmp_path, server, numbering):
    server.openai.index = numbering
    client = OpenAIClient(_client(server, "openai"))
    with pytest.raises(BadReply, match="every item needs a distinct whole-number index from 0 to 2"):
        client.embed("nomic-embed-text", ["search_document: a", "search_document: b", "search_document: c"])
    with pytest.raises(BadReply, match="index"):
        open_chatbot(docs=HANDBOOK, client_settings=_client(server, "openai"), cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache" / "embeddings").rglob("*.npy"))


def test_embedding_items_out_of_order_are_put_in_order_and_without_indexes_list_order_is_said(server):
    texts = ["search_document: hotel limit", "search_document: annual leave", "search_document: laptop"]
    client = OpenAIClient(_client(server, "openai"))
    expected = client.embed("nomic-embed-text", texts)
    assert client.embedding_order == INDEXED
    server.openai.index = "reversed"  # true indexes, items listed backwards: the indexes decide
    assert np.array_equal(client.embed("nomic-embed-text", texts), expected)
    server.openai.index = "none"
    assert np.array_equal(client.embed("nomic-embed-text", texts), expected) and client.embedding_order == LISTED


def test_a_run_over_a_server_without_indexes_says_list_order_was_assumed(tmp_path, server):
    server.openai.index = "none"
    result = run_evaluation(_run(tmp_path, server, "openai"))
    manifest = json.loads((result.run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["system"]["embedding_order"] == LISTED


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("fault", ["zero", "constant"])
def test_constant_vectors_are_refused_like_nan(server, backend, fault):
    server.embed_fault = fault  # every vector one number throughout: all zero, or 0.25 everywhere
    client = connect(_client(server, backend))
    with pytest.raises(BadReply, match=r"input 0: the vector is constant"):
        client.embed("nomic-embed-text", ["search_document: a", "search_document: b"])


def test_a_300_mb_judge_reply_costs_the_cap_not_its_size(tmp_path, server):
    """The judge's calls go through the same transport: a 300 MB verdict is an error entry, never held."""
    env = os.environ | {"PYTHONPATH": str(REPO)}
    cases = sample_cases(tmp_path)
    run_dir = run_evaluation(RunSettings(docs=str(HANDBOOK), cases=cases, out=str(tmp_path / "runs"), limit=3,
                                         system="offline")).run_dir
    server.chat_rule = judge_rule()
    args = ["judge", str(run_dir), "--host", server.url, "--retries", "0", "--reviews"]
    ordinary = _peak_rss_mb([*args, str(tmp_path / "a.jsonl"), "--cache-dir", str(tmp_path / "ca")], env)
    server.wire_fault = "huge"
    huge = _peak_rss_mb([*args, str(tmp_path / "b.jsonl"), "--cache-dir", str(tmp_path / "cb")], env)
    errors = json.loads((run_dir / "judge.json").read_text(encoding="utf-8"))["errors"]
    assert errors and all("the body passed 10,000,000 bytes" in e["error"] for e in errors)
    assert huge - ordinary < 60, f"judge: {huge:.0f} MB peak with a 300 MB reply, {ordinary:.0f} MB without"
