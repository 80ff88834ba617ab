"""The Ollama stand-in, driven by the official ``ollama`` client: shapes, semantics and fault modes.

Expected shapes and error texts are those real Ollama servers send (embed, chat, metadata, errors); error texts
are matched on status plus a loose substring, since their wording changes between Ollama versions.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import ollama
import pytest

from tests.fake_ollama import ChatReply, FakeOllama, ModelSpec, lexical_embedding, overlap_rule

EMBED, CHAT = "nomic-embed-text", "qwen3:4b"
# Same layout as chatbot/prompts/default.txt: instructions, passages separated by blank lines, ---, question.
PROMPT = """Answer using only the passages below (the source id is written after "source:").

Passages:

[source: manual.pdf#p1]
The pump must be serviced every 500 hours. Filters are cheap.

[source: manual.pdf#p2]
Replace the intake filter when pressure drops below 2 bar. Wear gloves!

---
Question: When should the intake filter be replaced on the pump?"""


@pytest.fixture
def fake():
    with FakeOllama() as server:
        yield server


@pytest.fixture
def client(fake):
    return ollama.Client(host=fake.url)


def _norm(v):
    return math.sqrt(sum(x * x for x in v))


def _cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / (_norm(a) * _norm(b))


def _user(text):
    return [{"role": "user", "content": text}]


# -- metadata endpoints ------------------------------------------------------------------------

def test_root_version_and_unknown_path(fake):
    assert httpx.get(fake.url + "/").text == "Ollama is running"
    head = httpx.head(fake.url + "/")
    assert head.status_code == 200 and head.content == b""
    assert httpx.get(fake.url + "/api/version").json() == {"version": "0.12.6"}
    fake.version = "0.30.1"
    assert httpx.get(fake.url + "/api/version").json()["version"] == "0.30.1"
    missing = httpx.get(fake.url + "/api/nope")
    assert (missing.status_code, missing.text) == (404, "404 page not found")


def test_list_gives_tagged_names_digests_and_offset_timestamps(client):
    models = {m.model: m for m in client.list().models}
    assert set(models) == {"nomic-embed-text:latest", "qwen3:4b"}
    for m in models.values():
        assert len(m.digest) == 64 and int(m.digest, 16) >= 0
        assert m.modified_at.utcoffset() is not None
    assert models["nomic-embed-text:latest"].details.family == "nomic-bert"


def test_show_reports_model_info_and_capabilities(client):
    shown = client.show(EMBED)
    assert shown.modelinfo["nomic-bert.embedding_length"] == 768
    assert shown.modelinfo["nomic-bert.context_length"] == 2048
    assert shown.capabilities == ["embedding"]
    assert "num_ctx" in shown.parameters
    assert set(client.show(CHAT).capabilities) == {"completion", "tools", "thinking"}


@pytest.mark.parametrize("call, fragment", [
    (lambda c: c.chat("nope", _user("hi")), "model 'nope' not found"),
    (lambda c: c.show("nope"), "model 'nope' not found"),
    (lambda c: c.embed("nope", "hi"), 'model "nope" not found, try pulling it first'),
])
def test_unknown_model_is_404(client, call, fragment):
    with pytest.raises(ollama.ResponseError) as err:
        call(client)
    assert err.value.status_code == 404 and fragment in err.value.error


def test_names_match_case_insensitively_with_default_latest_tag(fake, client):
    assert client.embed("NOMIC-Embed-Text:LATEST", "x").model == "NOMIC-Embed-Text:LATEST"
    fake.models["mistral"] = ModelSpec(["completion"], "llama")
    assert "mistral:latest" in {m.model for m in client.list().models}
    assert client.chat("Mistral:latest", _user("hi"), think=False).done
    del fake.models["qwen3:4b"]
    with pytest.raises(ollama.ResponseError):
        client.chat(CHAT, _user("hi"))


# -- /api/embed ----------------------------------------------------------------------------------

def test_embed_is_unit_length_deterministic_and_in_input_order(client):
    texts = ["the pump needs service", "filters are cheap", "gloves"]
    first = client.embed(EMBED, texts)
    assert [len(v) for v in first.embeddings] == [768] * 3
    assert all(abs(_norm(v) - 1) < 1e-9 for v in first.embeddings)
    assert client.embed(EMBED, texts).embeddings == first.embeddings
    assert client.embed(EMBED, texts[1]).embeddings == [first.embeddings[1]]
    assert first.prompt_eval_count == 8 and first.total_duration > 0 and first.load_duration > 0


def test_embed_is_lexical_prefixes_change_vectors_and_case_punctuation_differ_slightly(client):
    [plain, query] = client.embed(EMBED, ["pump service", "search_query: pump service"]).embeddings
    assert 0.3 < _cos(plain, query) < 0.99
    [a, b, other] = client.embed(EMBED, ["Pump service.", "pump service", "banana bread"]).embeddings
    assert 0.99 < _cos(a, b) < 1 - 1e-9
    assert _cos(a, other) < _cos(a, b)
    assert plain == lexical_embedding("pump service", 768)


def test_embed_dimensions_cuts_then_renormalises(client):
    full = client.embed(EMBED, "pump service").embeddings[0]
    short = client.embed(EMBED, "pump service", dimensions=256).embeddings[0]
    assert len(short) == 256 and abs(_norm(short) - 1) < 1e-9
    assert short == pytest.approx([x / _norm(full[:256]) for x in full[:256]])
    assert len(client.embed(EMBED, "x", dimensions=4096).embeddings[0]) == 768


def test_embed_truncates_silently_or_rejects_with_truncate_false(client):
    long_text = " ".join(f"w{i}" for i in range(2100))
    assert client.embed(EMBED, long_text).prompt_eval_count == 2048
    assert client.embed(EMBED, long_text, options={"num_ctx": 100}).prompt_eval_count == 100
    assert client.embed(EMBED, long_text).embeddings == client.embed(
        EMBED, " ".join(long_text.split()[:2048])).embeddings
    with pytest.raises(ollama.ResponseError) as err:
        client.embed(EMBED, ["short", long_text], truncate=False)
    assert err.value.status_code == 400
    assert "exceeds" in err.value.error and "context length" in err.value.error


def test_embed_rejects_bad_input_and_accepts_empty(fake, client):
    bad = httpx.post(fake.url + "/api/embed", json={"model": EMBED, "input": [1, 2]})
    assert (bad.status_code, bad.json()) == (400, {"error": "invalid input type"})
    empty = httpx.post(fake.url + "/api/embed", json={"model": EMBED, "input": []}).json()
    assert empty == {"model": EMBED, "embeddings": []}
    assert client.embed(EMBED, "").embeddings == []


# -- /api/chat -----------------------------------------------------------------------------------

def test_chat_default_rule_answers_with_thinking_and_metrics(client):
    reply = client.chat(CHAT, _user(PROMPT))
    sentence = "Replace the intake filter when pressure drops below 2 bar."
    assert json.loads(reply.message.content) == {
        "answer": sentence, "citations": [{"source_id": "manual.pdf#p2", "quote": sentence}]}
    assert reply.message.thinking == "(stand-in reasoning: overlap_rule)"
    assert reply.done and reply.done_reason == "stop" and reply.model == CHAT
    assert reply.prompt_eval_count == len(PROMPT.split())
    assert reply.eval_count > 0 and reply.eval_duration > 0 and reply.total_duration >= reply.eval_duration


def test_chat_stream_is_ndjson_and_joins_to_the_non_stream_reply(fake, client):
    whole = client.chat(CHAT, _user(PROMPT))
    chunks = list(client.chat(CHAT, _user(PROMPT), stream=True))
    assert len(chunks) > 3 and [c.done for c in chunks].count(True) == 1 and chunks[-1].done
    assert "".join(c.message.content for c in chunks) == whole.message.content
    assert "".join(c.message.thinking or "" for c in chunks) == whole.message.thinking
    assert chunks[-1].done_reason == "stop" and chunks[-1].eval_count == whole.eval_count
    raw = httpx.post(fake.url + "/api/chat", json={"model": CHAT, "messages": _user("hi")})
    assert raw.headers["content-type"] == "application/x-ndjson"
    assert raw.text.endswith("\n") and "" not in raw.text[:-1].split("\n")


@pytest.mark.parametrize("model, think, has_thinking", [
    (CHAT, None, True), (CHAT, True, True), (CHAT, "high", True), (CHAT, False, False),
    ("plain", None, False), ("plain", False, False)])
def test_think_semantics(fake, client, model, think, has_thinking):
    fake.models["plain"] = ModelSpec(["completion"], "llama")
    reply = client.chat(model, _user("hi"), think=think)
    assert (reply.message.thinking is not None) == has_thinking


def test_think_true_on_model_without_thinking_is_400(fake, client):
    fake.models["plain"] = ModelSpec(["completion"], "llama")
    with pytest.raises(ollama.ResponseError) as err:
        client.chat("plain", _user("hi"), think=True)
    assert err.value.status_code == 400 and 'does not support thinking' in err.value.error
    with pytest.raises(ollama.ResponseError) as err:
        client.chat(CHAT, _user("hi"), think="bogus")
    assert err.value.status_code == 400 and "invalid think value" in err.value.error
    with pytest.raises(ollama.ResponseError) as err:
        client.chat(EMBED, _user("hi"))
    assert err.value.status_code == 400 and "does not support chat" in err.value.error


def test_num_predict_cuts_content_with_done_reason_length(fake, client):
    fake.chat_rule = lambda body: "one two  three four five"
    reply = client.chat(CHAT, _user("hi"), options={"num_predict": 3})
    assert (reply.message.content, reply.done_reason) == ("one two  three", "length")
    assert client.chat(CHAT, _user("hi"), options={"num_predict": 5}).done_reason == "stop"


def test_format_json_and_schema_accepted_other_strings_500(fake, client):
    assert client.chat(CHAT, _user("hi"), format="json").done
    assert client.chat(CHAT, _user("hi"), format={"type": "object"}).done
    # The client refuses other strings itself, so send one raw.
    bad = httpx.post(fake.url + "/api/chat", json={"model": CHAT, "messages": _user("hi"), "format": "yaml"})
    assert bad.status_code == 500 and "invalid format" in bad.json()["error"]


def test_empty_messages_loads_the_model(client):
    reply = client.chat(CHAT, [])
    assert reply.done_reason == "load" and reply.message.content == ""


@pytest.mark.parametrize("rule, content, thinking", [
    (lambda b: "plain text", "plain text", "(stand-in reasoning: <lambda>)"),
    (lambda b: {"answer": "é"}, '{"answer": "é"}', "(stand-in reasoning: <lambda>)"),
    (lambda b: ChatReply("x", thinking="mine", done_reason="length"), "x", "mine")])
def test_chat_rule_return_types(fake, client, rule, content, thinking):
    fake.chat_rule = rule
    reply = client.chat(CHAT, _user("hi"))
    assert (reply.message.content, reply.message.thinking) == (content, thinking)


def test_chat_rule_exception_is_500(fake, client):
    fake.chat_rule = lambda body: 1 / 0
    with pytest.raises(ollama.ResponseError) as err:
        client.chat(CHAT, _user("hi"))
    assert err.value.status_code == 500 and "ZeroDivisionError" in err.value.error


# -- the default rule ----------------------------------------------------------------------------

def test_overlap_rule_picks_best_sentence_and_cites_its_passage():
    out = overlap_rule({"messages": [{"role": "user", "content": "old"}, {"role": "assistant", "content": "x"},
                                     {"role": "user", "content": PROMPT}]})
    assert out["citations"][0]["source_id"] == "manual.pdf#p2"
    assert out["answer"] == out["citations"][0]["quote"] == \
        "Replace the intake filter when pressure drops below 2 bar."


def test_overlap_rule_abstains_when_fewer_than_two_shared_words():
    unrelated = PROMPT.replace("When should the intake filter be replaced on the pump?",
                               "What is the capital of France and the pump?")
    assert overlap_rule({"messages": _user(unrelated)}) == {"answer": "", "citations": []}
    assert overlap_rule({"messages": []}) == {"answer": "", "citations": []}


def test_overlap_rule_ties_go_to_first_passage_and_sentence():
    prompt = ("[source: a] Red apples grow. Red apples fall.\n[source: b] Red apples rot.\n"
              "Question: red apples?")
    assert overlap_rule({"messages": _user(prompt)})["citations"] == [
        {"source_id": "a", "quote": "Red apples grow."}]


# -- fault modes ---------------------------------------------------------------------------------

def test_fail_next_hits_api_paths_only(fake, client):
    fake.fail_next(500, error="boom")
    assert httpx.get(fake.url + "/").status_code == 200  # not an /api/ path: not counted
    with pytest.raises(ollama.ResponseError) as err:
        client.list()
    assert (err.value.status_code, err.value.error) == (500, "boom")
    assert client.list().models


def test_fail_next_then_success_with_path_filter(fake, client):
    fake.fail_next(503, count=2, path="/api/chat")
    assert client.embed(EMBED, "x").embeddings  # other paths unaffected
    for _ in range(2):
        with pytest.raises(ollama.ResponseError) as err:
            client.chat(CHAT, _user("hi"))
        assert err.value.status_code == 503 and "server busy" in err.value.error
    assert client.chat(CHAT, _user("hi")).done
    assert fake.count("/api/chat") == 3


def test_drop_next_closes_the_connection_without_a_response(fake, client):
    fake.drop_next()
    with pytest.raises((httpx.RemoteProtocolError, ConnectionError)):
        client.embed(EMBED, "x")
    assert client.embed(EMBED, "x").embeddings


def test_delay_with_client_timeout_raises_read_timeout(fake):
    fake.delay_s = 2.0
    with pytest.raises(httpx.ReadTimeout):
        ollama.Client(host=fake.url, timeout=0.1).embed(EMBED, "x")


def test_embed_delay_can_differ_from_the_chat_delay(fake):
    fake.delay_s, fake.embed_delay_s = 2.0, 0.0  # chats slow, embeds immediate
    assert ollama.Client(host=fake.url, timeout=1.0).embed(EMBED, "x").embeddings
    with pytest.raises(httpx.ReadTimeout):
        ollama.Client(host=fake.url, timeout=0.1).chat(CHAT, _user("hi"))


@pytest.mark.parametrize("slots, peak", [(1, 1), (None, 3)])
def test_slots_limit_concurrent_chats(fake, slots, peak):
    fake.delay_s, fake.slots = 0.08, slots
    threads = [threading.Thread(target=ollama.Client(host=fake.url).chat, args=(CHAT, _user("hi")))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake.peak_chat_in_flight == peak and fake.count("/api/chat") == 3


def test_stopped_server_looks_down_even_on_a_kept_alive_connection():
    server = FakeOllama().start()
    client = ollama.Client(host=server.url)
    assert client.embed(EMBED, "x").embeddings
    server.stop()
    with pytest.raises(ConnectionError, match="Failed to connect"):
        client.embed(EMBED, "x")


@pytest.mark.parametrize("mode, prefix", [
    ("tags", "<think>\n(stand-in reasoning: <lambda>)\n</think>\n\nB"),
    ("close_only", "(stand-in reasoning: <lambda>)\n</think>\n\nB")])
def test_leak_think_puts_reasoning_into_content(fake, client, mode, prefix):
    fake.chat_rule, fake.leak_think = (lambda body: "B"), mode
    reply = client.chat(CHAT, _user("hi"))
    assert reply.message.content == prefix and reply.message.thinking is None


def test_mid_stream_error_raises_with_status_minus_one(fake, client):
    fake.chat_rule, fake.mid_stream_error = (lambda body: "alpha beta"), "runner crashed"
    seen = []
    with pytest.raises(ollama.ResponseError) as err:
        for chunk in client.chat(CHAT, _user("hi"), stream=True):
            seen.append(chunk.message.content)
    assert seen == ["alpha "] and err.value.status_code == -1 and err.value.error == "runner crashed"


# -- recording, reset, standalone ----------------------------------------------------------------

def test_recorded_bodies_are_exactly_what_the_client_sent(fake):
    sent = []
    client = ollama.Client(host=fake.url, event_hooks={"request": [lambda r: sent.append(json.loads(r.read()))]})
    client.chat(CHAT, _user("hi"), think=False, options={"temperature": 0})
    client.embed(EMBED, ["a", "b"], dimensions=8)
    assert fake.bodies("/api/chat") + fake.bodies("/api/embed") == sent
    assert sent[0] == {"model": CHAT, "messages": [{"role": "user", "content": "hi"}], "tools": [],
                       "stream": False, "think": False, "options": {"temperature": 0}}
    assert fake.requests[0].headers["user-agent"].startswith("ollama-python/")


def test_reset_restores_defaults(fake, client):
    fake.models.clear()
    fake.delay_s, fake.leak_think, fake.slots = 1.0, "tags", 1
    fake.fail_next(count=5)
    fake.reset()
    assert (fake.delay_s, fake.leak_think, fake.slots, fake.requests) == (0.0, None, None, [])
    assert client.chat(CHAT, _user(PROMPT)).message.thinking is not None


def test_standalone_entry_point_serves_and_says_it_is_a_stand_in():
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_ollama", "--port", "0"],
                            cwd=Path(__file__).parents[2], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "stand-in" in line and "not a model" in line
        url = line.split("OLLAMA_HOST=")[1].strip()
        assert httpx.get(url).text == "Ollama is running"
    finally:
        proc.terminate()
        proc.wait(timeout=5)
