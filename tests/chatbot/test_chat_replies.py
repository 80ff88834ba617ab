"""Issue 11, chat replies and what real Ollama servers do (items 3, 7-14), through real HTTP
against the test server. Its chat answers follow each test's rule; it is not a model."""

import json

import pytest

from chatbot.answer import AnswerSettings
from chatbot.bot import open_chatbot
from chatbot.cli import main as rag_chat
from harness.evaluate import run_evaluation
from harness.runs import read_rows
from harness.settings import RunSettings
from pdfrag.errors import InputTooLong
from pdfrag.ollama_client import ClientSettings, OllamaClient
from tests.conftest import HANDBOOK, REPO, SAMPLE_DOCS, sample_cases
from tests.fake_ollama import REPEAT_LIMIT_ERROR, ChatReply, ModelSpec

HOTEL = "Hotel costs are reimbursed up to EUR 160 per night, including breakfast."
QUESTION = "What is the hotel reimbursement limit per night?"
INSTRUCT = "qwen3:4b-instruct-2507-q4_K_M"


def bot_for(server, status=None, **settings):
    return open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url, backoff_s=0.0),
                        settings=AnswerSettings(**settings), status=status)


def cite_hotel(body):
    return {"answer": "EUR 160 per night.", "citations": [{"source_id": "handbook.pdf#p2", "quote": HOTEL}]}


def run_settings(server, tmp_path, **kw):
    return RunSettings(**({"docs": str(HANDBOOK), "cases": sample_cases(tmp_path),
                           "out": str(tmp_path / "results"), "host": server.url} | kw))


# -- 3: a chat reply that is not the API's shape ----------------------------------------------------------------
@pytest.mark.parametrize("fault, detail", [("not_json", "the body is not JSON"),
                                           ("envelope", "not the API's reply shape: message: Field required")])
def test_broken_chat_reply_is_that_cases_error_row_and_the_run_goes_on(server, tmp_path, fault, detail):
    server.break_next(fault, count=1)
    result = run_evaluation(run_settings(server, tmp_path))
    rows = read_rows(result.run_dir)
    assert rows[0].answer.status == "error"
    assert rows[0].error.startswith(f"bad reply from {server.url}: chat with qwen3:4b: {detail}")
    assert [r.error for r in rows[1:]] == [None] * (len(rows) - 1)
    assert result.manifest.status == "complete" and result.summary.errored == 1


# -- 7: reply-size cap ------------------------------------------------------------------------------------------
def test_oversize_reply_is_malformed_and_stored_truncated_with_its_length(server):
    server.huge_reply_chars = 5_000
    result = bot_for(server, max_reply_chars=1_000).ask(QUESTION)
    assert result.status == "malformed_output" and result.model_answer == "" and result.citations == ()
    assert len(result.raw) == 1_000 and result.usage["reply_chars"] > 5_000
    size = result.usage["reply_chars"]
    expected = f"reply is {size:,} characters, over --max-reply-chars 1,000; only its first 1,000 characters are stored"
    assert result.reasons == (expected,)


def test_default_cap_keeps_a_run_row_small(server, tmp_path):
    server.huge_reply_chars = 300_000  # default cap: 200,000 characters
    run_dir = run_evaluation(run_settings(server, tmp_path)).run_dir
    rows = read_rows(run_dir)
    assert all(r.answer.status == "malformed_output" for r in rows)
    assert all(len(r.answer.raw) == 200_000 and r.answer.model_answer == "" for r in rows)
    # one truncated copy per row, not three full ones
    assert (run_dir / "rows.jsonl").stat().st_size < len(rows) * 230_000


def test_rag_chat_max_reply_chars_flag(server, capsys):
    server.huge_reply_chars = 3_000
    assert rag_chat(["ask", QUESTION, "--docs", str(HANDBOOK), "--host", server.url, "--json",
                     "--max-reply-chars", "2000"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "malformed_output" and len(record["raw"]) == 2_000


# -- 8: thinking budget -----------------------------------------------------------------------------------------
def test_default_context_holds_prompt_plus_two_phases():
    settings = AnswerSettings()
    assert settings.num_ctx == 16384 and settings.num_ctx >= 2 * settings.budget + 4096  # budget: 4096 on Ollama


def test_context_check_reserves_two_phases_only_when_thinking(server):
    server.chat_rule = cite_hotel
    thinking = bot_for(server, num_ctx=10_500, num_predict=5_000).ask(QUESTION)
    assert thinking.status == "error" and "2 x num_predict=5000 (thinking, then the answer)" in thinking.error
    assert server.chat_bodies() == []  # refused before the call
    plain = bot_for(server, num_ctx=10_500, num_predict=5_000, think=False).ask(QUESTION)
    assert plain.status == "answered" and len(server.chat_bodies()) == 1


def test_thinking_that_spends_the_budget_is_named(server):
    server.chat_rule = lambda body: ChatReply(content="", thinking="Let me think. " * 50, done_reason="length")
    result = bot_for(server).ask(QUESTION)
    assert result.status == "malformed_output" and result.thinking_chars == len("Let me think. " * 50)
    assert result.reasons[0].startswith("the thinking spent the whole budget: 700 characters of thinking and no "
                                        "answer before num_predict=4096")


def test_answer_cut_after_thinking_is_a_plain_cut(server):
    server.chat_rule = lambda body: ChatReply(content='{"answer": "EUR', thinking="short", done_reason="length")
    result = bot_for(server).ask(QUESTION)
    assert result.status == "malformed_output" and result.reasons[0].startswith("reply cut off at num_predict")


# -- 9: repeated-token aborts -----------------------------------------------------------------------------------
@pytest.mark.parametrize("fault", ["aborted", "repeat_limit"])
def test_repeat_limit_abort_is_malformed_output_with_its_reason(server, fault):
    server.chat_rule = cite_hotel
    bot = bot_for(server)
    server.break_next(fault)
    result = bot.ask(QUESTION)
    assert result.status == "malformed_output" and result.error is None
    assert result.reasons[0].startswith("generation aborted (repeated tokens): ")
    assert result.raw == ("the the the the" if fault == "aborted" else "")
    assert bot.ask(QUESTION).status == "answered"  # only that question is affected


def test_repeat_limit_500_in_a_run_is_not_an_error_row(server, tmp_path):
    server.fail_next(500, error=REPEAT_LIMIT_ERROR, path="/api/chat")
    rows = read_rows(run_evaluation(run_settings(server, tmp_path)).run_dir)
    assert rows[0].answer.status == "malformed_output" and rows[0].error is None
    assert rows[0].answer.reasons[0].startswith("generation aborted (repeated tokens)")


# -- 10: --think off on a model that thinks anyway --------------------------------------------------------------
def test_think_off_on_a_hybrid_thinking_model_warns(server):
    warnings = bot_for(server, think=False).warnings
    assert any("--think off may be ignored: qwen3:4b" in w and INSTRUCT in w for w in warnings)
    assert not any("--think off" in w for w in bot_for(server).warnings)


def test_think_off_on_an_instruct_model_does_not_warn(server):
    server.models[INSTRUCT] = ModelSpec(["completion", "tools", "thinking"], "qwen3", context_length=262_144)
    assert not any("--think off" in w for w in bot_for(server, chat_model=INSTRUCT, think=False).warnings)


def test_readme_names_the_non_thinking_baseline_and_greedy_advice():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert INSTRUCT in readme and "greedy decoding" in readme


# -- 11: usage figures of thinking runs -------------------------------------------------------------------------
def test_usage_is_labelled_final_phase_when_thinking(server):
    server.chat_rule = cite_hotel
    thinking = bot_for(server).ask(QUESTION)
    plain = bot_for(server, think=False).ask(QUESTION)
    assert thinking.usage["phase"] == "final" and plain.usage["phase"] == "single"
    for usage in (thinking.usage, plain.usage):  # the old keys are still there
        assert {"prompt_tokens", "output_tokens", "total_ms", "load_ms", "eval_ms", "retries"} <= set(usage)


# -- 12: cold start ---------------------------------------------------------------------------------------------
def test_preflight_loads_the_chat_model_and_records_the_load_time(server):
    server.load_delay_s = 0.3
    heard = []
    bot = bot_for(server, status=heard.append)
    assert heard == ["loading qwen3:4b…"]
    load = server.bodies("/api/chat")[0]
    assert load["messages"] == [] and load["keep_alive"] == "10m" and load["model"] == "qwen3:4b"
    assert bot.server.models["qwen3:4b"].load_ms >= 300
    assert bot.server.to_dict()["models"]["qwen3:4b"]["load_ms"] >= 300  # what the manifests record
    answer = bot.ask(QUESTION)
    assert answer.usage["load_ms"] < 100  # the first question did not pay for the load


def test_rag_chat_shows_loading_progress(server, capsys):
    assert rag_chat(["ask", QUESTION, "--docs", str(HANDBOOK), "--host", server.url]) == 0
    assert "loading qwen3:4b…" in capsys.readouterr().err


# -- 13: a source build's version ------------------------------------------------------------------------------
@pytest.mark.parametrize("version, warned", [("0.0.0", False), ("0.11.2", True), ("0.12.4", False)])
def test_version_0_0_0_is_not_called_old(server, version, warned):
    server.version = version
    assert any("older than 0.12.4" in w for w in bot_for(server).warnings) is warned


# -- 14: the context error of a server with context shift off --------------------------------------------------
@pytest.mark.parametrize("status", [400, 500])
def test_prompt_longer_than_context_is_a_context_error(server, status):
    server.fail_next(status, error="the prompt is longer than the context length (9000 > 8192)", path="/api/chat")
    client = OllamaClient(ClientSettings(host=server.url))
    with pytest.raises(InputTooLong, match=r'refused the input as too long: "the prompt is longer than the context '
                                           r'length \(9000 > 8192\)"; on the server: raise --num-ctx') as caught:
        client.chat("qwen3:4b", [{"role": "user", "content": "hi"}], format=None, options={}, think=None)
    assert caught.value.server_said == "the prompt is longer than the context length (9000 > 8192)"


# -- 22 (chatbot side): duplicate files reach the chatbot's warnings --------------------------------------------
def test_duplicate_documents_are_warned_about_by_the_chatbot(server, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("handbook.pdf", "handbook-copy.pdf"):
        (docs / name).write_bytes((SAMPLE_DOCS / "handbook.pdf").read_bytes())
    bot = open_chatbot(docs=docs, client_settings=ClientSettings(host=server.url))
    assert any("handbook-copy.pdf, handbook.pdf have the same content" in w for w in bot.warnings)
