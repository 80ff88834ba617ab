"""Engine tier: a default `rag-eval run --backend openai` of the bundled handbook against a real llama-server with
4,096-token slots (tests/engine/). Contracts only: what a 135M model writes is a status with its reasons, never an
error row, and the run records the real server and what it measured."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.runs import read_manifest, read_rows
from tests.conftest import HANDBOOK, sample_cases
from tests.engine.engine import chat_settings, embed_settings
from tests.engine.servers import ServerSettings

pytestmark = pytest.mark.engine

STATUSES = {"answered", "no_answer", "invalid_citation", "malformed_output"}


def test_a_default_run_on_4096_token_slots_answers_cases_with_real_tokens(chat_server, embed_server, tmp_path):
    """Contract (issue #28, b and 'defaults that fit'): with no --num-predict, a run against -c 8192 -np 2 is not
    refused by the window check: every row validates, none is an error, each reply carries the tokens the model
    generated and llama.cpp's own timings; the manifest names llama.cpp, the model and the per-slot window, and
    records the reply budget decided from it (a quarter of 4,096)."""
    out = tmp_path / "runs"
    code = main(["run", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--limit", "2",
                 "--backend", "openai", "--host", chat_server.base_url, "--embed-host", embed_server.base_url,
                 "--chat-model", "smollm2", "--embed-model", "gemma-embed", "--out", str(out)])
    assert code in (0, 1), code  # 1: no case passed, which a 135M model may well do
    (run_dir,) = out.iterdir()
    rows = read_rows(run_dir)
    assert len(rows) == 2
    assert [r.error for r in rows] == [None, None]
    assert {r.answer.status for r in rows} <= STATUSES
    for row in rows:
        usage = row.usage
        assert usage["output_tokens"] > 0 and usage["prompt_tokens"] > 0
        assert usage["eval_ms"] > 0 and usage["prompt_eval_ms"] >= 0
    manifest = read_manifest(run_dir)
    server = manifest.system.model_server
    assert server["kind"] == "llama.cpp"
    assert server["models"]["smollm2"]["context_length"] == 4096
    assert server["models"]["smollm2"]["root"].endswith(".gguf")
    assert manifest.system.to_json()["settings"]["num_predict"] == 1024


def test_a_window_too_small_for_the_prompt_makes_error_rows_before_generation(start_server, engine, embed_server,
                                                                              tmp_path):
    """Contract (issue #28, c): against one slot of 1,024 tokens the handbook's prompt (~1,600 tokens) cannot fit:
    every case is an error row naming the server's window and the flags to change, decided before any tokens are
    generated (the rows carry no generated tokens)."""
    small = start_server(chat_settings(engine, ctx=1024, slots=1))
    out = tmp_path / "runs"
    code = main(["run", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--limit", "2",
                 "--backend", "openai", "--host", small.base_url, "--embed-host", embed_server.base_url,
                 "--chat-model", "smollm2", "--embed-model", "gemma-embed", "--out", str(out)])
    assert code != 0
    (run_dir,) = out.iterdir()
    rows = read_rows(run_dir)
    assert len(rows) == 2
    for row in rows:
        assert row.error is not None and "context window of 1024 tokens" in row.error, row.error
        assert "-c" in row.error and "--top-k" in row.error
        assert not row.usage.get("output_tokens")


def test_a_chunk_over_the_embedding_servers_physical_batch_quotes_the_server_and_names_ub(start_server, engine,
                                                                                         chat_server, tmp_path,
                                                                                         capsys):
    """Contract (issue #44 item 2): a real llama-server started with a physical batch (-b/-ub) of 64 tokens refuses
    the handbook's chunks (~100 tokens and more) whatever its context; the run stops before any row with the
    server's own words quoted and -ub named before --chunk-size. The same run against the embedding server as
    docs/backends.md starts it (-b/-ub the whole 2,048-token window) embeds every chunk."""
    small = start_server(ServerSettings(engine.embed_model, "gemma-embed", 2048, 1, 1,
                                        ("--embeddings", "--pooling", "mean", "-b", "64", "-ub", "64")))
    args = ["run", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--limit", "1", "--backend", "openai",
            "--host", chat_server.base_url, "--chat-model", "smollm2", "--embed-model", "gemma-embed",
            "--num-predict", "64"]
    code = main([*args, "--embed-host", small.base_url, "--out", str(tmp_path / "small")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "too large to process" in err and "physical batch" in err  # llama.cpp's own words, quoted
    assert "-ub" in err and err.index("-ub") < err.index("--chunk-size")
    assert not list((tmp_path / "small").glob("*/rows.jsonl"))
    documented = start_server(embed_settings(engine))
    assert main([*args, "--embed-host", documented.base_url, "--out", str(tmp_path / "documented")]) in (0, 1)
    (run_dir,) = (tmp_path / "documented").iterdir()
    assert [row.error for row in read_rows(run_dir)] == [None]
