"""Engine tier: `rag-chat ask` one handbook question against a real llama-server (tests/engine/). Contracts only:
whatever a 135M model writes, the answer has a documented status and every citation carries our verdict."""

from __future__ import annotations

import json

import pytest

from chatbot.answer import NO_ANSWER, STATUSES
from chatbot.cli import main as rag_chat
from pdfrag.text import find_quote
from tests.conftest import HANDBOOK

pytestmark = pytest.mark.engine


def test_rag_chat_ask_gives_a_documented_status_with_every_citation_validated(chat_server, embed_server, capsys):
    """Contract (issue #28, a): one question through the bundled chatbot on the OpenAI-compatible path gives one
    of the documented statuses, never an error; each citation the model gave is judged (valid, or a reason); an
    `answered` status has only valid citations, each naming a retrieved passage whose text holds its quote; any
    other status shows the fixed no-answer text."""
    code = rag_chat(["ask", "What is the hotel reimbursement limit per night?", "--docs", str(HANDBOOK), "--json",
                     "--backend", "openai", "--host", chat_server.base_url, "--embed-host", embed_server.base_url,
                     "--chat-model", "smollm2", "--embed-model", "gemma-embed", "--num-predict", "256", "--quiet"])
    assert code == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["status"] in STATUSES and answer["status"] != "error" and answer["error"] is None
    passages = {h["source_id"]: h["text"] for h in answer["hits"]}
    assert passages  # the question was answered from retrieved passages
    for citation in answer["citations"]:
        assert citation["valid"] is (citation["reason"] is None)
    if answer["status"] == "answered":
        assert answer["citations"] and all(c["valid"] for c in answer["citations"])
        for c in answer["citations"]:
            assert c["source_id"] in passages and find_quote(passages[c["source_id"]], c["quote"])[1] is not None
    else:
        assert answer["text"] == NO_ANSWER
