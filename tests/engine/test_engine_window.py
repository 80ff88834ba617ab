"""Engine tier (issue #28, c; defects the engine showed): prompts our 3-characters-a-token estimate undercounts
(digits: SmolLM2's tokenizer makes a token of each), counted by llama-server's own tokenizer before asking, or
refused by the server when it cannot count; and an embedding model on a server that does not embed."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.cli.run import EXIT_ALL_ERRORED
from harness.runs import read_rows
from pdfrag.asking import CHARS_PER_TOKEN
from pdfrag.errors import ModelMissing
from pdfrag.model_server import ClientSettings, preflight
from pdfrag.openai_client import OpenAIClient
from tests.conftest import sample_cases
from tests.engine.cli_runs import run_argv
from tests.engine.engine import chat_settings

pytestmark = pytest.mark.engine

DIGITS = "".join(str(i % 10) for i in range(2400))  # ~800 tokens by the estimate, ~2,400 by SmolLM2's tokenizer
WINDOW = 2048  # -c 2048 -np 1


def _template(tmp_path) -> str:
    path = tmp_path / "digits.txt"
    path.write_text(f"Reference numbers: {DIGITS}\n\n$passages\n\nQuestion: $question\nReply in JSON.\n")
    return str(path)


def _run(server, embed_server, run_cache, tmp_path) -> list:
    out = tmp_path / "runs"
    code = main(["run", *run_argv(server, embed_server, sample_cases(tmp_path), out, run_cache, "--limit", "1",
                                  "--num-predict", "256", "--prompt", _template(tmp_path))])
    assert code == EXIT_ALL_ERRORED, code  # the run's documented code for it: an error row, not a crash
    (run_dir,) = out.iterdir()
    return read_rows(run_dir)


def test_the_servers_token_count_refuses_what_the_estimate_lets_through(engine, start_server, embed_server,
                                                                       run_cache, tmp_path):
    """Contract: the estimate says the digits prompt fits a 2,048-token slot with 256 to write; llama-server's
    count says it does not: the case is an error row naming the window and the count, before generation."""
    assert len(DIGITS) // CHARS_PER_TOKEN + 400 + 256 < WINDOW  # what the estimate alone would have let through
    server = start_server(chat_settings(engine, ctx=WINDOW, slots=1))
    (row,) = _run(server, embed_server, run_cache, tmp_path)
    assert row.error and "counted by the server" in row.error and f"context window of {WINDOW} tokens" in row.error
    assert not row.usage.get("output_tokens")


def test_a_prompt_the_server_refuses_is_the_windows_error_row(engine, start_server, embed_server, run_cache,
                                                              tmp_path, monkeypatch):
    """Contract (issue #28, c): where the server offers no token count (vLLM, LM Studio; here the count is turned
    off), the estimate lets the digits prompt through and llama-server refuses it: the same error row naming the
    window and what to change, not a crash."""
    monkeypatch.setattr(OpenAIClient, "count_tokens", lambda self, model, messages: None)
    server = start_server(chat_settings(engine, ctx=WINDOW, slots=1))
    (row,) = _run(server, embed_server, run_cache, tmp_path)
    assert row.error and "the server refused the prompt as too long" in row.error, row.error
    assert f"context window of {WINDOW} tokens" in row.error and "--num-predict" in row.error
    assert not row.usage.get("output_tokens")


def test_a_chat_server_given_as_the_embedding_server_is_refused_by_preflight(chat_server, tmp_path, capsys):
    """Contract (defect: the model name passed preflight, the run failed at the first chunk): preflight embeds one
    text; llama-server without --embeddings refuses it, and preflight says what to change. Through `rag-eval run`
    the command stops with exit code 1 before any case, naming the same."""
    client = OpenAIClient(ClientSettings(host=chat_server.base_url, backend="openai", retries=0))
    with pytest.raises(ModelMissing, match="does not serve embeddings.*--embeddings"):
        preflight(client, chat_model=None, embed_model="smollm2")
    code = main(["run", *run_argv(chat_server, chat_server, sample_cases(tmp_path), tmp_path / "runs",
                                  tmp_path / "cache", "--limit", "1", embed_model="smollm2")])
    assert code == 1
    assert "does not serve embeddings" in capsys.readouterr().err
