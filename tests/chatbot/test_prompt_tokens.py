"""The window check with the server's own token count (llama.cpp's `/chat/completions/input_tokens`), the refusal of
a prompt our estimate let through, and the embedding probe of preflight, against the test server's llama.cpp
dialect (tests/fake_openai.py: whitespace tokens, so one-letter words are a token for every two characters, more
than the 3-characters-a-token estimate counts)."""

from __future__ import annotations

import pytest

from chatbot.answer import AnswerSettings, answer, answer_template
from chatbot.answer_cache import CachingGenerator
from chatbot.bot import open_chatbot
from pdfrag.asking import Asker, ChatOptions, Failed, PromptTemplate, over_budget
from pdfrag.errors import ModelMissing
from pdfrag.model_server import ClientSettings, preflight
from pdfrag.openai_client import EMBED_PROBE, OpenAIClient
from pdfrag.reply_cache import AnswerCache
from tests.conftest import HANDBOOK
from tests.fake_ollama import ModelSpec

CHAT = "/v1/chat/completions"
FILLER = " ".join("x" for _ in range(3000))  # 5,999 characters: ~1,999 tokens estimated, 3,000 counted


def _bot(server, *, window: int):
    server.openai.kind, server.slots = "llama.cpp", 1
    server.models["qwen3:4b"] = ModelSpec(["completion"], "qwen3", context_length=window)
    return open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url + "/v1", backend="openai"))


def _template() -> PromptTemplate:
    return PromptTemplate(f"{FILLER}\n$passages\n\nQuestion: $question\n", "filler.txt")


def test_the_estimate_alone_undercounts_short_tokens():
    """The estimate (3 characters a token) lets FILLER plus 100 tokens into a 2,500-token window; the server's
    count of 3,000 does not: the check then says the count is the server's and that it exceeds, not may exceed."""
    assert over_budget(FILLER, num_predict=100, window=2500, thinks=False) is None
    problem = over_budget(FILLER, num_predict=100, window=2500, thinks=False, tokens=3000)
    assert problem == "the prompt (3000 tokens, counted by the server) plus num_predict=100 exceeds"


def test_a_prompt_the_estimate_passes_is_refused_by_the_servers_count_before_generation(server):
    """Contract: where the server counts tokens (llama.cpp), the window check uses its count: the case is an
    error naming the server's window, and no chat call is made for it."""
    bot = _bot(server, window=3000)
    chats = server.count(CHAT)
    result = answer("What is the hotel limit?", bot.retriever, bot.generator, AnswerSettings(num_predict=200, top_k=1),
                    _template())
    assert result.status == "error" and "counted by the server" in result.error
    assert "server's context window of 3000 tokens" in result.error
    assert server.count(CHAT) == chats and server.token_counts >= 1


def test_the_answer_cache_keeps_the_servers_window_and_count(server, tmp_path):
    """Defect: with the answer cache on (sweeps, --answer-cache) the generator lost the server's window, so the
    default num_predict and the window check fell back to num_ctx and the server's count was never asked."""
    bot = _bot(server, window=3000)
    generator = CachingGenerator(bot.generator, AnswerCache(tmp_path / "answers"))
    assert generator.server_window == 3000
    result = answer("What is the hotel limit?", bot.retriever, generator, AnswerSettings(num_predict=200, top_k=1),
                    _template())
    assert result.status == "error" and "counted by the server" in result.error
    assert "server's context window of 3000 tokens" in result.error


def test_a_reply_from_the_answer_cache_costs_no_token_count(server, tmp_path):
    """The server's count is asked only for a prompt that will be sent: answering the same question again from the
    answer cache makes no request at all, neither a count nor a chat."""
    bot = _bot(server, window=8192)
    generator = CachingGenerator(bot.generator, AnswerCache(tmp_path / "answers"))
    settings = AnswerSettings(num_predict=200, top_k=1)
    before = (server.token_counts, server.count(CHAT))  # preflight's own chat (loading the model)
    first = answer("What is the hotel limit?", bot.retriever, generator, settings, answer_template())
    asked = (server.token_counts - before[0], server.count(CHAT) - before[1])
    again = answer("What is the hotel limit?", bot.retriever, generator, settings, answer_template())
    assert asked == (1, 1) and (server.token_counts - before[0], server.count(CHAT) - before[1]) == asked
    assert generator.hits == 1 and again.model_answer == first.model_answer and first.status != "error"


def test_a_prompt_refused_by_the_server_is_the_windows_error_row(server):
    """Contract: without a token counter (a build without the endpoint) the estimate lets the prompt through, the
    server refuses it as too long: the case is an error row naming the window and our flags, as the check before
    asking says, not a crash; the client stops asking for counts after the first 404."""
    bot = _bot(server, window=3000)
    server.openai.counts_tokens = False
    settings = AnswerSettings(num_predict=200, top_k=1)
    results = [answer("What is the hotel limit?", bot.retriever, bot.generator, settings, _template())
               for _ in range(2)]
    for result in results:
        assert result.status == "error", result.status
        assert 'the server refused the prompt as too long: "request (' in result.error  # its own words, quoted
        assert 'tokens) exceeds the available context size (3000 tokens), try increasing it"' in result.error
        assert "server's context window of 3000 tokens" in result.error and "--num-predict" in result.error
        assert result.error.index("a larger -c") < result.error.index("--num-predict")  # the server's fix first
        assert "on the server:" not in result.error  # the client's own advice is not repeated
    assert server.count("/v1/chat/completions/input_tokens") == 1


def test_drafting_and_the_judge_count_with_the_server_too(server):
    """Contract: the asker of drafting and the judge checks the window with the server's count as well."""
    server.openai.kind, server.slots = "llama.cpp", 1
    server.models["qwen3:4b"] = ModelSpec(["completion"], "qwen3", context_length=2500)
    client = OpenAIClient(ClientSettings(host=server.url + "/v1", backend="openai"))
    info = preflight(client, chat_model="qwen3:4b", embed_model=None, load=False).models["qwen3:4b"]
    asker = Asker(client, ChatOptions("qwen3:4b", num_predict=100), info.digest, (), None, window=2500)
    outcome = asker.ask(PromptTemplate("$text", "t.txt"), {"type": "object"}, text=FILLER)
    assert isinstance(outcome, Failed) and "3000 tokens, counted by the server" in outcome.error
    assert asker.chat_calls == 0


def test_an_embedding_model_on_a_server_that_does_not_embed_is_refused_by_preflight(server):
    """Contract (defect: it passed preflight and failed at the first chunk): the embedding model is probed with
    one short text; a chat-only llama.cpp server is refused with what to change."""
    server.openai.kind = "llama.cpp"
    client = OpenAIClient(ClientSettings(host=server.url + "/v1", backend="openai"))
    with pytest.raises(ModelMissing, match="does not serve embeddings.*--embeddings.*--embed-host"):
        preflight(client, chat_model=None, embed_model="qwen3:4b")
    assert [b["input"] for b in server.bodies("/v1/embeddings")] == [[EMBED_PROBE]]


def test_the_probe_passes_an_embedding_model_and_gives_its_width(server):
    """A server that embeds passes the probe; its vector's width is the model's width."""
    server.openai.kind = "llama.cpp"
    info = preflight(OpenAIClient(ClientSettings(host=server.url + "/v1", backend="openai")), chat_model=None,
                     embed_model="nomic-embed-text")
    assert info.models["nomic-embed-text"].embedding_length == 768
