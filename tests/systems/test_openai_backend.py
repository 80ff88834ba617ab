"""`--backend openai` end to end through the CLIs against the test server's /v1 side: the bundled evaluation (and
that its rows equal an Ollama-API run's apart from identity and timings), compare, a sweep, `rag-eval draft`, a
separate embedding server, settings from a config file (issue #21 items 2, 3 and "must show")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.runs import read_manifest, read_rows
from tests.conftest import HANDBOOK, sample_cases
from tests.fake_ollama import FakeOllama
from tests.support import draft_rules

# What may differ between the two backends' rows: the server that answered and the timings.
IDENTITY_AND_TIMINGS = {"host", "usage.elapsed_ms", "usage.total_ms", "usage.load_ms", "usage.prompt_eval_ms",
                        "usage.eval_ms"}


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict):
        return {k: v for key, item in value.items()
                for k, v in _flat(item, f"{prefix}.{key}" if prefix else key).items()}
    return {prefix: value}


def _only_run(out: Path, label: str) -> Path:
    [found] = [p for p in out.iterdir() if p.name.endswith(label)]
    return found


def test_the_bundled_evaluation_gives_the_same_rows_on_both_apis_and_compare_shows_no_change(server, tmp_path,
                                                                                             capsys):
    out = tmp_path / "results"
    assert main(["run", "--host", server.url, "--label", "native", "--out", str(out)]) == 0
    assert main(["run", "--backend", "openai", "--host", server.url + "/v1", "--label", "openai",
                 "--out", str(out)]) == 0
    native, openai = _only_run(out, "native"), _only_run(out, "openai")
    a, b = read_rows(native), read_rows(openai)
    assert len(a) == len(b) == 195  # the whole bundle: sample_docs/all_cases.jsonl
    assert server.count("/v1/chat/completions") >= 195 and server.count("/api/chat") >= 195  # each API was used
    differing = set()
    for x, y in zip(a, b):
        fx, fy = _flat(x.model_dump(mode="json")), _flat(y.model_dump(mode="json"))
        differing |= {k for k in fx.keys() | fy.keys() if fx.get(k) != fy.get(k)}
    assert differing <= IDENTITY_AND_TIMINGS and "host" in differing
    capsys.readouterr()
    assert main(["compare", str(native), str(openai)]) == 0
    printed = capsys.readouterr().out
    metric_lines = [line for line in printed.splitlines() if line.split()[:1] and line.split()[0] in
                    ("hit@1", "recall@4", "facts", "behaviour", "quote_valid", "passed")]
    assert len(metric_lines) == 6 and all("+0.000" in line for line in metric_lines)
    assert "flips (fixed = better in B, broke = worse in B):\n  none" in printed


def test_the_manifest_of_an_openai_run_says_identity_by_name_only(server, tmp_path):
    out = tmp_path / "results"
    assert main(["run", "--backend", "openai", "--host", server.url + "/v1", "--docs", str(HANDBOOK), "--cases",
                 sample_cases(tmp_path), "--out", str(out)]) == 0
    manifest = read_manifest(next(out.iterdir()))
    section = manifest.system.model_server
    assert "ollama" not in manifest.system
    assert section["backend"] == "openai" and section["identity"] == "identity by name only"
    assert section["kind"] == "vllm" and section["version"] == "0.11.2"
    chat = section["models"]["qwen3:4b"]
    assert chat["root"] == "/models/qwen3:4b" and chat["system_fingerprint"] == "vllm-0.11.2-fake0001"
    assert manifest.settings.to_json()["backend"] == "openai"
    assert manifest.system.system == "pdf-rag-eval chatbot over an OpenAI-compatible server"


def test_a_separate_embedding_server(server, tmp_path):
    with FakeOllama() as embedder:
        out = tmp_path / "results"
        assert main(["run", "--backend", "openai", "--host", server.url + "/v1", "--embed-host", embedder.url,
                     "--embed-backend", "ollama", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                     "--out", str(out)]) == 0
        assert embedder.count("/api/embed") > 0 and embedder.count("/v1/chat/completions") == 0
        assert server.count("/v1/embeddings") == 0 and server.count("/api/embed") == 0
        assert server.count("/v1/chat/completions") > 0
        manifest = read_manifest(next(out.iterdir()))
        assert manifest.system.embed_server["host"] == embedder.url
        assert "nomic-embed-text" in manifest.system.embed_server["models"]


def test_backend_and_host_from_a_config_file(server, tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(f'backend = "openai"\nhost = "{server.url}/v1"\ndocs = "{HANDBOOK}"\n'
                      f'cases = "{sample_cases(tmp_path)}"\n', encoding="utf-8")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "results")]) == 0
    assert server.count("/v1/chat/completions") > 0 and server.count("/api/chat") == 0


def test_an_unknown_backend_in_a_config_is_bad_input(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text('backend = "grpc"\n', encoding="utf-8")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "results")]) == 2
    assert "backend must be one of ollama, openai, got 'grpc'" in capsys.readouterr().err


def test_a_sweep_end_to_end_with_backend_openai(server, tmp_path, capsys):
    grid = tmp_path / "sweep.toml"
    grid.write_text("top-k = [2, 4]\nk = [1, 2]\n", encoding="utf-8")
    flags = ["--backend", "openai", "--host", server.url + "/v1", "--docs", str(HANDBOOK), "--cases",
             sample_cases(tmp_path), "--out", str(tmp_path / "sweeps")]
    assert main(["sweep", str(grid), *flags, "--dry-run"]) == 0  # counts calls: asks /v1/models, answers nothing
    assert server.count("/v1/chat/completions") == 0
    assert main(["sweep", str(grid), *flags]) == 0
    [sweep_dir] = list((tmp_path / "sweeps").iterdir())
    manifest = json.loads((sweep_dir / "sweep.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["cells"]) == 2
    for cell in manifest["cells"]:
        run = read_manifest(sweep_dir / cell["run_dir"])
        assert run.status == "complete" and run.system.model_server["identity"] == "identity by name only"
    assert server.count("/api/chat") == 0 and server.count("/v1/chat/completions") > 0


def test_draft_end_to_end_with_backend_openai(server, tmp_path):
    server.chat_rule = draft_rules.draft_rule
    out = tmp_path / "drafts.jsonl"
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(out), "--backend", "openai",
                 "--host", server.url + "/v1"]) == 0
    drafts = [json.loads(line) for line in out.read_text().splitlines()]
    assert any(d["kind"] == "answerable" and d["verification"]["passed"] for d in drafts)
    assert server.count("/api/chat") == 0 and server.count("/v1/embeddings") > 0
    manifest = json.loads(out.with_name("drafts.manifest.json").read_text())
    assert manifest["server"]["identity"] == "identity by name only"


def test_the_several_host_pool_also_spreads_openai_servers(server, tmp_path):
    with FakeOllama() as other:
        out = tmp_path / "results"
        assert main(["run", "--backend", "openai", "--host", server.url + "/v1", "--host", other.url + "/v1",
                     "--workers", "2", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                     "--out", str(out)]) == 0
        rows = read_rows(next(out.iterdir()))
        assert {r.host for r in rows} == {server.url + "/v1", other.url + "/v1"}
        assert other.count("/v1/chat/completions") > 1  # the warm-up and answers


def test_workers_keep_hundreds_of_requests_in_flight_against_one_url(server, tmp_path):
    import threading
    import time

    from harness.evaluate import run_evaluation
    from harness.settings import RunSettings
    server.hold_after = 1  # the warm-up passes; every answer then waits until all 195 are in flight
    settings = RunSettings(backend="openai", host=server.url + "/v1", workers=256, out=str(tmp_path / "results"))
    done: list = []
    runner = threading.Thread(target=lambda: done.append(run_evaluation(settings)))
    runner.start()
    deadline = time.monotonic() + 120
    while server.chat_in_flight < 195 and time.monotonic() < deadline and runner.is_alive():
        time.sleep(0.05)
    in_flight = server.chat_in_flight
    server.release()
    runner.join(120)
    assert in_flight == 195 and server.peak_chat_in_flight == 195  # every case at once, one URL, one client
    assert done and done[0].summary.rows == 195 and done[0].summary.errored == 0


def test_several_chat_servers_and_one_embedding_server(server, tmp_path):
    with FakeOllama() as other, FakeOllama() as embedder:
        for chat_only in (server, other):  # as vLLM: one model per server
            del chat_only.models["nomic-embed-text:latest"]
        out = tmp_path / "results"
        assert main(["run", "--backend", "openai", "--host", server.url + "/v1", "--host", other.url + "/v1",
                     "--embed-host", embedder.url + "/v1", "--docs", str(HANDBOOK), "--cases",
                     sample_cases(tmp_path), "--out", str(out)]) == 0
        assert embedder.count("/v1/embeddings") > 0 and embedder.count("/v1/chat/completions") == 0
        assert server.count("/v1/embeddings") == other.count("/v1/embeddings") == 0


def test_a_host_with_the_other_apis_path_is_refused_with_the_backend_to_give(tmp_path, capsys):
    """A /v1 URL with the default --backend ollama (and /api with --backend openai) would fail later with a 404 that
    does not say why: it is refused at once, naming the flag to give, and nothing is written."""
    from pdfrag.backends import connect
    from pdfrag.errors import InputError
    from pdfrag.model_server import ClientSettings

    out = tmp_path / "runs"
    args = ["run", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--limit", "1", "--out", str(out)]
    assert main([*args, "--host", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err
    assert "ends with /v1, the OpenAI-compatible API's path" in err and "add --backend openai" in err
    assert not out.exists() or not any(out.iterdir())
    with pytest.raises(InputError, match="give --backend ollama with the server's root"):
        connect(ClientSettings(host="http://127.0.0.1:9/api", backend="openai"))
    assert connect(ClientSettings(host="http://127.0.0.1:9/v1", backend="openai")) is not None


def test_a_chunk_over_llama_cpps_physical_batch_quotes_the_server_and_names_ub_first(server, tmp_path, capsys):
    """llama.cpp refuses an embedding input longer than its physical batch (-ub, default 512 tokens) with HTTP 500,
    whatever its context: the refusal is quoted as the server sent it, the server-side fix (-b/-ub) comes before
    the harness-side one (--chunk-size), and nothing is run (issue #44 item 2)."""
    server.openai.kind, server.openai.ubatch = "llama.cpp", 40
    code = main(["run", "--backend", "openai", "--host", server.url + "/v1", "--out", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "error: chunk " in err and ".pdf#p" in err and "current batch size: 40)" in err
    assert '"input (' in err and 'tokens) is too large to process. increase the physical batch size' in err
    assert err.index("-ub") < err.index("--chunk-size")
    assert "context" not in err.split("too large to process")[0]  # not called the context: -c does not help
    assert not list((tmp_path / "results").glob("*/rows.jsonl"))


def test_with_the_physical_batch_raised_the_same_run_runs(server, tmp_path):
    """The documented fix: -ub at least the longest chunk in tokens (the handbook's default chunks: under 400)."""
    server.openai.kind, server.openai.ubatch = "llama.cpp", 2048
    assert main(["run", "--backend", "openai", "--host", server.url + "/v1", "--limit", "3",
                 "--out", str(tmp_path / "results")]) == 0


def test_a_busy_embedding_server_neither_hides_a_wrong_chat_model_nor_holds_the_run(server, tmp_path, capsys):
    """The embedding server busy (its probe queued): a chat model the chat server does not serve is said at once,
    and a right one waits at most the preflight's 10 s, saying on stderr what it waits for, then stops as busy
    (issue #44 item 5)."""
    import time
    with FakeOllama() as busy:
        busy_url = busy.url + "/v1"
        busy.openai.kind, busy.embed_delay_s = "llama.cpp", 60.0
        base = ["run", "--backend", "openai", "--host", server.url + "/v1", "--embed-host", busy_url,
                "--out", str(tmp_path / "results")]
        started = time.monotonic()
        assert main([*base, "--chat-model", "qwen3:8b"]) == 1
        assert time.monotonic() - started < 5
        assert "qwen3:8b" in capsys.readouterr().err
        started = time.monotonic()
        assert main(base) == 1
        elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert 10 <= elapsed < 14, elapsed
    assert f"checking whether {busy_url} embeds with nomic-embed-text: waiting for the server…" in err
    assert "no answer within 10 s: the server is busy" in err and "check --embed-host" in err
