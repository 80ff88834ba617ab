"""The OpenAI-compatible client against the test server's /v1 side (tests/fake_openai.py) over real HTTP: the exact
bodies sent, each server's dialect of replies, identity, errors and embeddings (issue #21 items 1, 3, 5)."""

from __future__ import annotations

import socket

import pytest

from chatbot.answer import ANSWER_SCHEMA, AnswerSettings, answer
from chatbot.bot import ServerGenerator, open_chatbot
from pdfrag.errors import (
    BadReply,
    InputError,
    InputTooLong,
    ModelMissing,
    ServerBusy,
    ServerTimeout,
    ServerUnreachable,
)
from pdfrag.model_server import NAME_ONLY, ClientSettings, preflight
from pdfrag.openai_client import EMBED_PROBE, OpenAIClient
from tests.conftest import HANDBOOK
from tests.fake_ollama import ModelSpec

OPTIONS = {"temperature": 0.0, "seed": 42, "num_ctx": 16384, "num_predict": 4096}
PROMPT = ("[source: handbook.pdf#p2]\nHotel costs are reimbursed up to EUR 160 per night.\n\n"
          "Question: What is the hotel limit per night?")
CHAT = "/v1/chat/completions"


def client(server, *, sleep=None, **kw) -> OpenAIClient:
    settings = ClientSettings(host=server.url + "/v1", backend="openai", backoff_s=0.0, **kw)
    return OpenAIClient(settings, sleep=sleep) if sleep else OpenAIClient(settings)


def ask(c: OpenAIClient, think: bool | None = None):
    return c.chat("qwen3:4b", [{"role": "user", "content": PROMPT}], format=ANSWER_SCHEMA, options=OPTIONS,
                  think=think)


def test_the_request_sends_schema_temperature_seed_and_both_budgets(server):
    ask(client(server))
    body = server.bodies(CHAT)[-1]
    assert body == {"model": "qwen3:4b", "messages": [{"role": "user", "content": PROMPT}], "stream": False,
                    "temperature": 0.0, "top_p": 1, "seed": 42, "max_tokens": 4096, "max_completion_tokens": 4096,
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"name": "reply", "strict": True, "schema": ANSWER_SCHEMA}}}


@pytest.mark.parametrize("kind, switch", [("vllm", {"chat_template_kwargs": {"enable_thinking": False}}),
                                          ("llama.cpp", {"chat_template_kwargs": {"enable_thinking": False}}),
                                          ("ollama", {"reasoning_effort": "none"})])
def test_think_off_sends_the_servers_switch_and_the_model_does_not_think(server, kind, switch):
    server.openai.kind = kind
    c = client(server)
    preflight(c, chat_model="qwen3:4b", embed_model=None, load=False)  # detects the server's make
    reply = ask(c, think=False)
    body = server.bodies(CHAT)[-1]
    assert {k: body[k] for k in switch} == switch
    assert reply.thinking == "" and reply.content.startswith("{")


@pytest.mark.parametrize("dialect", ["reasoning", "reasoning_content", "both", "think_tags"])
def test_thinking_is_read_from_every_servers_field_and_kept_apart(server, dialect):
    server.openai.reasoning = dialect
    reply = ask(client(server))
    assert reply.thinking == "(stand-in reasoning: overlap_rule)"  # once, never the sum of two fields
    assert reply.content.lstrip().startswith('{"answer": "Hotel costs are reimbursed')
    assert "<think>" not in reply.content and "</think>" not in reply.content


def test_usage_present_and_absent(server):
    reply = ask(client(server))
    assert reply.prompt_tokens == len(PROMPT.split()) and reply.output_tokens > 0 and reply.done_reason == "stop"
    server.openai.usage = False
    reply = ask(client(server))
    assert reply.prompt_tokens is None and reply.output_tokens is None and reply.content.startswith("{")


def test_llama_cpp_timings_become_durations(server):
    server.openai.kind = "llama.cpp"
    reply = ask(client(server))
    assert reply.prompt_eval_ms == pytest.approx(len(PROMPT.split()) * 0.001) and reply.eval_ms > 0


def test_a_server_without_json_schema_gets_the_older_form_then_keeps_it(server):
    server.openai.json_schema = False
    c = client(server)
    assert ask(c).content.startswith("{")
    first, second = server.bodies(CHAT)
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object", "schema": ANSWER_SCHEMA}
    ask(c)  # the client remembers: one request, in the form the server took
    assert len(server.bodies(CHAT)) == 3 and server.bodies(CHAT)[-1]["response_format"]["type"] == "json_object"


def test_a_server_refusing_every_format_gets_the_schema_in_the_prompt(server):
    server.openai.json_schema = False
    c = client(server)
    c.format_mode = "json_object"
    server.fail_next(400, error="'response_format.type' must be 'json_schema' or 'text'", path=CHAT)  # LM Studio
    assert ask(c).content.startswith("{")
    last = server.bodies(CHAT)[-1]
    assert "response_format" not in last and "matching this JSON Schema" in last["messages"][-1]["content"]


def test_identity_by_name_only_with_root_version_context_and_fingerprint(server):
    info = preflight(client(server), chat_model="qwen3:4b", embed_model="nomic-embed-text")
    data = info.to_dict()
    assert data["backend"] == "openai" and data["kind"] == "vllm" and data["identity"] == NAME_ONLY
    assert data["version"] == "0.11.2"
    chat = data["models"]["qwen3:4b"]
    assert chat["root"] == "/models/qwen3:4b" and chat["context_length"] == 262_144
    assert chat["system_fingerprint"] == "vllm-0.11.2-fake0001" and chat["load_ms"] > 0
    assert len(chat["digest"]) == 64 and chat["identity"] == NAME_ONLY


def test_a_changed_name_or_version_is_a_changed_identity(server):
    first = preflight(client(server), chat_model="qwen3:4b", embed_model=None, load=False)
    server.openai.version = "0.12.0"
    second = preflight(client(server), chat_model="qwen3:4b", embed_model=None, load=False)
    assert first.models["qwen3:4b"].digest != second.models["qwen3:4b"].digest


def test_llama_cpp_context_is_the_per_slot_window_of_props(server):
    server.openai.kind = "llama.cpp"
    info = preflight(client(server), chat_model="qwen3:4b", embed_model=None, load=False)
    assert info.kind == "llama.cpp" and info.version == "b6502-0c1e5709"
    # /v1/models meta.n_ctx is the whole cache (262144); /props says what one of the 4 slots gets
    chat = info.models["qwen3:4b"]
    assert chat.context_length == 262_144 // 4 and chat.root == "/models/model.gguf"


def test_llama_cpp_serving_one_model_is_not_taken_for_another(server):
    """llama.cpp in single-model mode answers whatever model name a request sends: preflight insists on the listed
    id or one of its aliases, so a run for qwen3:4b never records that name beside another model's answers."""
    server.openai.kind = "llama.cpp"
    server.models = {"qwen3:4b": server.models["qwen3:4b"]}
    with pytest.raises(ModelMissing, match="model 'smollm2' is not served .*it serves: qwen3:4b"):
        preflight(client(server), chat_model="smollm2", embed_model=None)
    assert server.count(CHAT) == 0  # refused from the list: no chat was sent (a real llama.cpp would answer it)
    assert preflight(client(server), chat_model="qwen3:4b", embed_model=None).models["qwen3:4b"].name == "qwen3:4b"


def test_no_server_at_the_url(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = OpenAIClient(ClientSettings(host=f"http://127.0.0.1:{port}/v1", backend="openai"))
    with pytest.raises(ServerUnreachable, match=f"no server at http://127.0.0.1:{port}/v1"):
        preflight(c, chat_model="qwen3:4b", embed_model=None)


def test_an_unknown_model_lists_the_served_ones(server):
    with pytest.raises(ModelMissing, match="it serves: nomic-embed-text, qwen3:4b"):
        preflight(client(server), chat_model="Qwen/Qwen3-8B", embed_model=None)
    with pytest.raises(ModelMissing, match="it serves: nomic-embed-text, qwen3:4b"):  # a 404 on the call itself
        client(server).chat("gone", [{"role": "user", "content": "x"}], format=None, options=OPTIONS, think=None)


@pytest.mark.parametrize("status", [429, 503])
def test_busy_replies_are_retried_honouring_retry_after(server, status):
    waits: list[float] = []
    server.fail_next(status, count=2, path=CHAT, retry_after=2, error="No deployments available")
    reply = ask(client(server, sleep=waits.append, retries=3))
    assert waits == [2.0, 2.0] and reply.retries == 2 and reply.content.startswith("{")


def test_busy_without_retry_after_backs_off_and_stays_busy(server):
    waits: list[float] = []
    server.fail_next(503, count=5, path=CHAT)
    c = OpenAIClient(ClientSettings(host=server.url + "/v1", backend="openai", retries=2, backoff_s=0.5),
                     sleep=waits.append)
    with pytest.raises(ServerBusy, match="stayed busy"):
        ask(c)
    assert waits == [0.5, 1.0]


def test_timeout_malformed_and_wrong_envelope(server):
    server.delay_s = 2.0
    with pytest.raises(ServerTimeout, match="took longer than 0.3 s"):
        ask(client(server, timeout_s=0.3))
    server.delay_s = 0.0
    server.break_next("not_json", path=CHAT)
    with pytest.raises(BadReply, match="not JSON"):
        ask(client(server))
    server.break_next("envelope", path=CHAT)
    with pytest.raises(BadReply, match=r"not a chat completion"):
        ask(client(server))


@pytest.mark.parametrize("kind, wording", [("vllm", "maximum context length is 64 tokens"),
                                           ("llama.cpp", "exceeds the available context size")])
def test_context_errors_in_each_servers_wording(server, kind, wording):
    server.openai.kind = kind
    server.models["qwen3:4b"] = ModelSpec(["completion", "thinking"], "qwen3", context_length=64)
    long_prompt = [{"role": "user", "content": "word " * 200}]
    with pytest.raises(InputTooLong, match=wording):
        client(server).chat("qwen3:4b", long_prompt, format=None, options=OPTIONS | {"num_predict": 8}, think=None)


# Other servers' wordings of the same errors (docs/backends.md): SGLang's context error,
# LiteLLM's mapped exception name, LM Studio's error body (a string, not an object), and a key refused.
@pytest.mark.parametrize("status, error, string_errors, raised, match", [
    (400, "Requested token count exceeds the model's maximum context length of 4096 tokens. You requested a total "
          "of 5000 tokens: 4000 tokens from the input messages and 1000 tokens for the completion. Please reduce the "
          "number of tokens in the input messages or the completion to fit within the limit.", False, InputTooLong,
     r'too long: "Requested token count exceeds.*"; on the server: give it a longer context \(llama.cpp: a larger '
     r"-c or fewer -np slots; vLLM: --max-model-len\)"),
    (400, "The input (5000 tokens) is longer than the model's context length (4096 tokens).", False, InputTooLong,
     "longer than the model's context length"),
    # llama.cpp's wording for an embedding batch longer than its slot (server code; the engine probe of #28)
    (400, "input (5000 tokens) is larger than the max context size (2048 tokens). skipping", False, InputTooLong,
     "larger than the max context size"),
    (400, "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: input too long",
     False, InputTooLong, "ContextWindowExceededError"),
    (500, "an error of the server's own", True, BadReply, r"HTTP 500: an error of the server's own$"),  # a string body
    (401, "Invalid API key", False, BadReply, r"refused the request \(HTTP 401: Invalid API key\).*--api-key-env"),
    (403, "Forbidden", True, BadReply, r"HTTP 403: Forbidden.*--api-key-env"),
])
def test_other_servers_wordings_of_errors(server, status, error, string_errors, raised, match):
    server.openai.string_errors = string_errors
    server.fail_next(status, path=CHAT, error=error)
    with pytest.raises(raised, match=match):
        ask(client(server, retries=0))


def test_llama_cpps_physical_batch_refusal_is_quoted_with_its_own_fix(server):
    """An embedding input over llama.cpp's -ub (HTTP 500, whatever the context): the server's words kept, the
    input named, and the fix the physical batch, not the context."""
    server.openai.kind, server.openai.ubatch = "llama.cpp", 10
    with pytest.raises(InputTooLong) as caught:
        client(server, retries=0).embed("nomic-embed-text", ["short", "word " * 30, "short too"])
    refusal = caught.value
    assert refusal.item_index == 1
    assert refusal.server_said == ("input (30 tokens) is too large to process. increase the physical batch size "
                                   "(current batch size: 10)")
    assert "-b and -ub at least the longest input" in refusal.server_fix and "larger -c does not help" in str(refusal)
    assert server.count("/v1/embeddings") == 3  # the batch, then each input alone up to the refused one


def test_a_retry_after_past_two_minutes_is_not_waited_for(server):
    waits: list[float] = []
    server.fail_next(429, count=1, path=CHAT, retry_after=3600)
    ask(OpenAIClient(ClientSettings(host=server.url + "/v1", backend="openai", retries=1, backoff_s=0.25),
                     sleep=waits.append))
    assert waits == [0.25]  # an hour is not waited for: the client's own backoff instead


def test_the_precall_check_uses_the_servers_window(server):
    server.models["qwen3:4b"] = ModelSpec(["completion", "thinking"], "qwen3", context_length=3000)
    bot = open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url + "/v1", backend="openai"))
    assert isinstance(bot.generator, ServerGenerator) and bot.generator.server_window == 3000
    result = answer("What is the hotel limit?", bot.retriever, bot.generator, AnswerSettings(num_predict=2900),
                    bot.template)
    assert result.status == "error" and "server's context window of 3000 tokens" in result.error
    assert len(server.bodies(CHAT)) == 1  # the warm-up only: nothing was sent for the question


def test_embeddings_are_checked_and_over_long_input_is_named(server):
    c = client(server)
    vectors = c.embed("nomic-embed-text", ["search_document: one", "search_document: two words"])
    assert vectors.shape == (2, 768)
    server.break_next("nan", path="/v1/embeddings")
    with pytest.raises(BadReply, match="input 0: the vector contains NaN"):
        c.embed("nomic-embed-text", ["a", "b"])
    server.break_next("short", path="/v1/embeddings")
    with pytest.raises(BadReply, match="expected a vector of 768 numbers"):
        c.embed("nomic-embed-text", ["a"], dim=768)
    server.break_next("envelope", path="/v1/embeddings")
    with pytest.raises(BadReply, match="expected an object with a 'data' list"):
        c.embed("nomic-embed-text", ["a"])
    with pytest.raises(InputTooLong) as caught:
        c.embed("nomic-embed-text", ["short", "word " * 3000])
    assert caught.value.item_index == 1


def test_the_index_is_embedded_with_nomics_task_prefixes(server):
    open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url + "/v1", backend="openai"))
    inputs = [t for body in server.bodies("/v1/embeddings") for t in body["input"] if t != EMBED_PROBE]
    assert inputs and all(t.startswith("search_document: ") for t in inputs)
    assert all(b["encoding_format"] == "float" for b in server.bodies("/v1/embeddings"))


def test_the_api_key_comes_from_the_named_variable_and_is_sent_as_bearer(server, monkeypatch):
    monkeypatch.setenv("MY_VLLM_KEY", "sk-secret-123")
    c = client(server, api_key_env="MY_VLLM_KEY")
    info = preflight(c, chat_model="qwen3:4b", embed_model=None)
    assert server.requests[-1].headers["authorization"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in repr(info.to_dict()) and "sk-secret-123" not in repr(c.settings)
    monkeypatch.delenv("MY_VLLM_KEY")
    with pytest.raises(InputError, match="--api-key-env MY_VLLM_KEY"):
        client(server, api_key_env="MY_VLLM_KEY")


def test_the_answer_cache_key_holds_the_backend_and_the_name_identity(server, tmp_path):
    from chatbot.answer_cache import CachingGenerator
    from pdfrag.ollama_client import OllamaClient
    from pdfrag.reply_cache import AnswerCache
    cache, settings = AnswerCache(tmp_path / "answers"), AnswerSettings()
    native = OllamaClient(ClientSettings(host=server.url))
    keys = []
    for c in (native, client(server)):
        info = preflight(c, chat_model="qwen3:4b", embed_model=None, load=False)
        keys.append(CachingGenerator(ServerGenerator.of(c, "qwen3:4b", info.models["qwen3:4b"]), cache)
                    .key(PROMPT, settings, []))
    server.openai.version = "0.12.0"  # the same name on another server version: another model for the cache
    info = preflight(client(server), chat_model="qwen3:4b", embed_model=None, load=False)
    keys.append(CachingGenerator(ServerGenerator.of(client(server), "qwen3:4b", info.models["qwen3:4b"]), cache)
                .key(PROMPT, settings, []))
    assert len(set(keys)) == 3


def test_an_oversize_reply_is_malformed_output_as_on_ollama(server):
    bot = open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url + "/v1", backend="openai"),
                       settings=AnswerSettings(max_reply_chars=1000))
    server.huge_reply_chars = 5000
    result = bot.ask("What is the hotel limit per night?")
    assert result.status == "malformed_output" and "over --max-reply-chars 1,000" in result.reasons[0]
    assert len(result.raw) == 1000 and result.usage["reply_chars"] > 5000


def test_a_cut_off_reply_and_a_repeat_limit_abort(server):
    bot = open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url + "/v1", backend="openai"),
                       settings=AnswerSettings(num_predict=5))
    result = bot.ask("What is the hotel limit per night?")
    assert result.status == "malformed_output" and result.done_reason == "length"
    server.fail_next(500, error="prediction aborted, token repeat limit reached", path=CHAT)
    result = bot.ask("What is the hotel limit per night?")
    assert result.status == "malformed_output" and "repeated tokens" in result.reasons[0]


def test_a_reply_that_breaks_the_schema_is_malformed_output(server):
    bot = open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url + "/v1", backend="openai"))
    server.chat_rule = lambda body: {"answer": "EUR 160", "citations": "handbook.pdf#p2"}
    result = bot.ask("What is the hotel limit per night?")
    assert result.status == "malformed_output" and "does not match the answer schema at citations" in result.reasons[0]


def test_ollama_v1_resolves_names_as_ollama_does(server):
    server.openai.kind = "ollama"
    info = preflight(client(server), chat_model="qwen3:4b", embed_model="nomic-embed-text", load=False)
    assert info.kind == "ollama" and info.models["nomic-embed-text"].name == "nomic-embed-text:latest"
    assert info.models["nomic-embed-text"].context_length is None  # Ollama's /v1 reports no window: --num-ctx


def test_a_busy_servers_preflight_says_what_it_waits_for_then_gives_up_as_busy(server):
    """A server whose slots are taken queues the preflight's one-text embedding: within 2 s the check says what
    it waits for, and at its own deadline it gives up with "busy", whatever the client's --timeout (issue #44
    item 5). A server that answers at once is checked without a word."""
    import time
    heard: list[tuple[float, str]] = []
    started = time.monotonic()
    preflight(client(server), chat_model="qwen3:4b", embed_model="nomic-embed-text",
              status=lambda line: heard.append((time.monotonic() - started, line)), load=False)
    assert heard == []
    server.openai.kind = "llama.cpp"  # its one-text embedding probe waits for a free slot
    server.embed_delay_s = 60.0  # the test server's stop ends the wait
    started = time.monotonic()
    with pytest.raises(ServerBusy, match=r"checking whether http://127\.0\.0\.1:\d+/v1 serves qwen3:4b and embeds with "
                                         r"nomic-embed-text: no answer within 3 s: the server is busy") as busy:
        preflight(client(server, timeout_s=300.0), chat_model="qwen3:4b", embed_model="nomic-embed-text",
                  status=lambda line: heard.append((time.monotonic() - started, line)), deadline_s=3.0)
    elapsed = time.monotonic() - started
    assert 3.0 <= elapsed < 4.5, elapsed
    [(said_at, line)] = heard
    assert said_at < 2.0 and line == (f"checking whether {server.url}/v1 serves qwen3:4b and embeds with "
                                      "nomic-embed-text: waiting for the server…")
    assert "check --host" in str(busy.value)
