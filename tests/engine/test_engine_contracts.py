"""Engine tier: the project's OpenAI-compatible client, as it is, against a real llama-server (tests/engine/).

The models have 135M and 270M parameters and answer poorly: these tests check contracts (identity, windows,
shapes, structured output, finish reasons, errors), never wording.
"""

from __future__ import annotations

import json
import time
import urllib.request

import jsonschema
import numpy as np
import pytest

from chatbot.answer import ANSWER_SCHEMA
from pdfrag.errors import InputTooLong, ModelMissing, ServerTimeout
from pdfrag.model_server import NAME_ONLY, ClientSettings, preflight
from pdfrag.openai_client import OpenAIClient
from tests.engine.engine import chat_settings

pytestmark = pytest.mark.engine

TEXTS = ["The hotel limit is 150 euros per night.", "Trains are booked in second class.",
         "Meals are reimbursed up to 40 euros a day.", "Receipts are kept for seven years."]


def _client(server) -> OpenAIClient:
    return OpenAIClient(ClientSettings(host=server.base_url, backend="openai", timeout_s=300, connect_timeout_s=3,
                                       retries=0))


def test_preflight_reads_the_slot_window_and_a_name_identity(engine, chat_server):
    """Contract: preflight on llama-server detects llama.cpp (from /props), finds the alias, takes the window of
    one slot (-c 8192 / -np 2 = 4096, not /v1/models' whole cache), records the GGUF path as the root, a name-only
    identity with a 64-hex digest, and the warm-up's load time."""
    info = preflight(_client(chat_server), chat_model="smollm2", embed_model=None)
    model = info.models["smollm2"]
    assert (info.kind, info.to_dict()["identity"], model.identity) == ("llama.cpp", NAME_ONLY, NAME_ONLY)
    assert model.context_length == 4096
    assert model.root == str(engine.chat_model)
    assert len(model.digest) == 64 and model.load_ms is not None and model.load_ms > 0


def test_a_model_name_the_server_does_not_list_is_refused(chat_server):
    """Contract: llama-server answers any model name in single-model mode; preflight refuses a name that is neither
    the listed id nor one of its aliases, naming what is served."""
    with pytest.raises(ModelMissing, match="model 'qwen3:4b' is not served .*it serves: smollm2"):
        preflight(_client(chat_server), chat_model="qwen3:4b", embed_model=None)


def test_embeddings_are_unit_vectors_in_input_order(embed_server):
    """Contract: the client's embeddings from llama-server are one finite unit vector per input, n_embd (640)
    wide, in input order (a batch equals the same texts embedded one at a time: one slot, so batching changes
    nothing), different for different texts."""
    client = _client(embed_server)
    batch = client.embed("gemma-embed", TEXTS, batch_size=len(TEXTS))
    alone = np.vstack([client.embed("gemma-embed", [text]) for text in TEXTS])
    assert batch.shape == (len(TEXTS), 640)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-3)
    assert np.allclose(batch, alone, rtol=0, atol=1e-6)
    assert not np.allclose(batch[0], batch[1], atol=1e-2)


def test_structured_chat_is_valid_json_unless_cut_at_the_budget(chat_server):
    """Contract: a chat with the answer schema goes through the first structured-output mode (json_schema, no
    fallback) and ends with finish_reason `stop` and content valid for the schema, or `length` at the budget;
    usage and llama.cpp's timings reach the reply."""
    client = _client(chat_server)
    messages = [{"role": "user", "content": f"Passages:\n{TEXTS[0]}\n\nWhat is the hotel limit? Reply in JSON."}]
    reply = client.chat("smollm2", messages, format=ANSWER_SCHEMA, think=None,
                        options={"temperature": 0, "seed": 42, "num_predict": 200})
    assert client.format_mode == "json_schema"
    assert reply.done_reason in ("stop", "length")
    if reply.done_reason == "stop":
        jsonschema.validate(json.loads(reply.content), ANSWER_SCHEMA)
    assert reply.prompt_tokens and reply.prompt_tokens > 0 and reply.output_tokens and 0 < reply.output_tokens <= 200
    assert reply.prompt_eval_ms is not None and reply.eval_ms is not None


def test_a_prompt_over_the_slot_window_is_input_too_long(engine, start_server):
    """Contract: a prompt longer than the slot (here -c 1024 -np 2: 512 tokens) is refused by the server, and
    the client turns the refusal into InputTooLong (a context error), not a bad reply."""
    server = start_server(chat_settings(engine, ctx=1024, slots=2))
    words = " ".join(f"word{i}" for i in range(1500))
    with pytest.raises(InputTooLong):
        _client(server).chat("smollm2", [{"role": "user", "content": words}], format=None, think=None,
                             options={"temperature": 0, "seed": 1, "num_predict": 16})


def _busy_slots(server) -> list[int]:
    with urllib.request.urlopen(server.url + "/slots", timeout=10) as reply:
        return [slot["id"] for slot in json.load(reply) if slot["is_processing"]]


def test_no_slot_keeps_generating_after_a_client_timeout(engine, start_server):
    """Contract: when the client gives up on a chat (its timeout), the server stops generating for it within
    about a second instead of running on to max_tokens. /slots is read only twice: llama.cpp notices a closed
    connection only after a second with no other result, and every /slots answer is one, so polling it faster
    than once a second would itself keep the abandoned generation alive. A server of its own: on the tier's
    shared one an earlier test's request may hold the slots, so this chat can time out still queued."""
    chat_server = start_server(chat_settings(engine))
    client = OpenAIClient(ClientSettings(host=chat_server.base_url, backend="openai", timeout_s=2, retries=0))
    with pytest.raises(ServerTimeout):
        client.chat("smollm2", [{"role": "user", "content": "Write a very long story about a lighthouse."}],
                    format=None, think=None, options={"temperature": 0, "seed": 1, "num_predict": 2000})
    assert _busy_slots(chat_server) != []  # still generating when the client left (2,000 tokens take ~60 s)
    time.sleep(2.5)
    assert _busy_slots(chat_server) == []
