"""The one asker drafting and the judge share (pdfrag/asking.py `Asker.request`), against the test
server (tests/fake_ollama.py). Its chat rule here: reply `{"ok": true}` to every request; it is not a model.

A model that thinks writes up to num_predict twice (thinking, then the answer), so a
prompt that fits beside one num_predict but not two is refused before any call when the model thinks, and sent
when it does not."""

from __future__ import annotations

from pdfrag.asking import ERROR_CHARS, Asker, ChatOptions, Failed, Replied, read_reply
from pdfrag.ollama_client import ClientSettings, OllamaClient

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
PROMPT = "x" * 3000  # ~1000 tokens by the answer path's estimate of 3 characters a token


def _asker(server, think: bool) -> Asker:
    server.chat_rule = lambda body: {"ok": True}
    client = OllamaClient(ClientSettings(host=server.url, retries=0))
    # 1000 + 1000 fits 2500; 1000 + 2 x 1000 does not
    return Asker(client, ChatOptions("qwen3:4b", num_ctx=2500, num_predict=1000, think=think), "digest", (), None)


def test_a_thinking_model_needs_room_for_two_phases_and_no_call_is_made(server):
    asker = _asker(server, think=True)
    outcome, reply = asker.request(PROMPT, SCHEMA)
    assert isinstance(outcome, Failed) and reply is None
    assert "2 x num_predict=1000 (thinking, then the answer) may exceed num_ctx=2500" in outcome.error
    assert asker.chat_calls == 0 and server.chat_bodies() == []


def test_without_thinking_the_same_prompt_is_sent(server):
    asker = _asker(server, think=False)
    outcome, reply = asker.request(PROMPT, SCHEMA)
    assert isinstance(outcome, Replied) and outcome.reply == {"ok": True} and reply is not None
    assert asker.chat_calls == 1 and len(server.chat_bodies()) == 1


def test_a_schema_error_quoting_a_runaway_value_is_kept_short():
    outcome = read_reply('{"answer": 1, "citations": "' + "x" * 1_000_000 + '"}',
                         {"type": "object", "properties": {"citations": {"type": "array"}}})
    assert isinstance(outcome, Failed) and len(outcome.error) <= ERROR_CHARS
    assert outcome.error.startswith("reply does not match the schema at citations: 'xxx")
