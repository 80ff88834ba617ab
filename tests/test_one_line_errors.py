"""Hostile inputs at the boundaries end in one line naming the host, file or field and what to do, with the exit
code docs/hardening.md gives, never a traceback (issue #43): replies over the cap or nested 200,000 deep from the
model server (tests/fake_ollama.py `WIRE_FAULTS`, streamed, never held whole), a lone surrogate or a deep nesting in
a saved line, a PDF with an unknown encryption version, an address or key with a line end, a `file://` base URL, a
label too long for a folder name. Each command runs in its own process, as a user runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.evaluate import run_evaluation
from harness.runs import read_rows
from harness.saved.layout import load_saved
from harness.settings import RunSettings
from pdfrag.backends import connect
from pdfrag.model_server import ClientSettings
from tests.conftest import HANDBOOK, REPO, sample_cases
from tests.fake_ollama import FakeOllama

WORKSHOP = REPO / "sample_docs" / "workshop"


def _rag_eval(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """(exit code, stdout and stderr, seconds) of `rag-eval ARGS` in a process of its own."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=REPO, capture_output=True, text=True,
                          env=os.environ | (env or {}), timeout=120)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def _one_error_line(output: str) -> str:
    """The one `error:` line of a command's output; fails on a traceback or on more than one."""
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error:") or ": error:" in line]
    assert len(errors) == 1, output[-3000:]
    return errors[0]


def _run_args(tmp_path: Path, host: str | None, backend: str) -> list[str]:
    """`rag-eval run` of one case; no --host: the environment's."""
    return ["run", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "runs"),
            "--limit", "1", *(["--host", host] if host else []), "--backend", backend, "--retries", "0"]


# ---------------------------------------------------------------- the model server's replies

def test_a_300_mb_props_reply_is_one_line_naming_the_host_and_the_cap(tmp_path, server):
    server.openai.kind, server.wire_fault, server.wire_paths = "llama.cpp", "huge", ("/props",)
    code, out, took = _rag_eval(*_run_args(tmp_path, server.url + "/v1", "openai"))
    line = _one_error_line(out)
    assert code == 1, out
    assert f"bad reply from {server.url}: GET /props: the body passed 10,000,000 bytes (decoded)" in line
    assert "--max-body-bytes" in line and took < 60
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # refused before any run


@pytest.mark.parametrize(("backend", "path", "what"), [("ollama", "/api/version", "GET /api/version"),
                                                        ("ollama", "/api/tags", "list models"),  # `ollama` parses
                                                        ("openai", "/v1/models", "list models"),
                                                        ("openai", "/v1/embeddings", "embed with")])
def test_json_nested_200000_deep_is_one_line_and_fails_fast(tmp_path, server, backend, path, what):
    server.wire_fault, server.wire_paths = "deep", (path,)  # 400 kB of brackets, streamed
    host = server.url + ("/v1" if backend == "openai" else "")
    code, out, took = _rag_eval(*_run_args(tmp_path, host, backend))
    line = _one_error_line(out)
    assert code == 1, out
    assert f"bad reply from {host}: {what}" in line and "nested too deeply to read" in line
    assert took < 15, f"{path}: {took:.1f} s"  # it took 56 s before, the time of the process's start is most of it
    assert server.count(path) == 1  # not asked again: the same reply would come back


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_a_chat_reply_nested_too_deep_is_that_cases_row(tmp_path, server, backend):
    def settings(out: str) -> RunSettings:
        return RunSettings(docs=str(HANDBOOK), cases=sample_cases(tmp_path), out=str(tmp_path / out), limit=2,
                           host=server.url + ("/v1" if backend == "openai" else ""), backend=backend, retries=0)

    server.wire_fault = "deep"  # the reply's envelope, 200,000 deep, on the chat paths (not loads or warm-ups)
    rows = read_rows(run_evaluation(settings("envelope")).run_dir)
    assert len(rows) == 2 and all(r.answer.status == "error" for r in rows)
    assert all("chat with qwen3:4b: the JSON body is nested too deeply to read" in (r.error or "") for r in rows)
    server.wire_fault = None
    server.chat_rule = lambda body: "[" * 5_000 + "]" * 5_000  # rule: the answer itself, 5,000 deep
    rows = read_rows(run_evaluation(settings("content")).run_dir)
    assert [r.answer.status for r in rows] == ["malformed_output"] * 2  # a broken reply, not the system's crash
    assert all("reply is JSON nested too deeply to read" in " ".join(r.answer.reasons) for r in rows)


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_a_lone_surrogate_in_the_servers_identity_is_refused_at_preflight_before_any_embedding(tmp_path, server,
                                                                                             backend):
    server.version = server.openai.version = "0.12\ud800"  # json.dumps sends the escape \ud800: legal JSON
    host = server.url + ("/v1" if backend == "openai" else "")
    code, out, _ = _rag_eval(*_run_args(tmp_path, host, backend))
    line = _one_error_line(out)
    assert code == 1, out
    assert f"bad reply from {host}: identity.version: '0.12\\ud800' holds a lone surrogate U+D800" in line
    assert "describe()" not in line and "loading" not in out  # blamed on the server, before the model loads
    assert server.count("/api/embed") + server.count("/v1/embeddings") == (backend == "openai")  # the probe only


# ---------------------------------------------------------------- addresses, keys, labels

@pytest.mark.parametrize("tail", ["\r\n", "\r\nX-Injected: yes"])
def test_ollama_host_with_cr_lf_is_one_line_naming_the_variable(tmp_path, server, tail):
    code, out, _ = _rag_eval(*_run_args(tmp_path, None, "ollama"), env={"OLLAMA_HOST": server.url + tail})
    line = _one_error_line(out)
    assert code == 2, out
    assert "--host / OLLAMA_HOST: the address holds U+000D" in line and "give the address alone" in line
    assert server.count() == 0  # nothing was sent


def test_a_file_url_a_url_without_scheme_and_a_key_with_cr_lf_are_said_as_what_they_are(tmp_path, server):
    code, out, _ = _rag_eval(*_run_args(tmp_path, "file:///tmp/models/v1", "openai"))
    line = _one_error_line(out)
    assert code == 2 and "a file:// address" in line and "http:// or https://" in line, out
    assert "dropped the connection" not in out
    code, out, _ = _rag_eval(*_run_args(tmp_path, server.url.removeprefix("http://") + "/v1", "openai"))
    line = _one_error_line(out)
    assert code == 2 and "the address names no http:// or https://" in line, out
    key = "sk-secret-4242\r\nX-Injected: yes"
    code, out, _ = _rag_eval(*_run_args(tmp_path, server.url + "/v1", "openai"), env={"OPENAI_API_KEY": key})
    line = _one_error_line(out)
    assert code == 2 and "the API key in $OPENAI_API_KEY holds a line break" in line, out
    assert "sk-secret-4242" not in out and "dropped the connection" not in out
    assert server.count() == 0


@pytest.mark.parametrize("command", ["run", "score"])
def test_a_300_character_label_is_refused_before_anything_starts(tmp_path, server, command):
    args = _run_args(tmp_path, server.url, "ollama") if command == "run" else \
        ["score", "--cases", str(WORKSHOP / "cases.csv"), "--out", str(tmp_path / "runs")]
    code, out, _ = _rag_eval(*args, "--label", "x" * 300)
    line = _one_error_line(out)
    assert code == 2, out
    assert "argument --label: 300 characters; give at most 200" in line
    assert not (tmp_path / "runs").exists() and server.count() == 0


# ---------------------------------------------------------------- saved outputs and PDFs

def _saved_jsonl(folder: Path, case_line: int, line_text: str) -> Path:
    """The workshop sample as JSONL in `folder`, with cases.jsonl's line `case_line` replaced by `line_text`."""
    saved = load_saved(WORKSHOP / "cases.csv")
    folder.mkdir(parents=True, exist_ok=True)
    for name, records in (("chunks", saved.chunks), ("claims", saved.claims)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    lines = [json.dumps(c.to_json()) for c in saved.cases]
    lines[case_line - 1] = line_text
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return folder / "cases.jsonl"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_lone_surrogate_in_a_saved_answer_is_that_lines_problem(tmp_path, workers):
    case = load_saved(WORKSHOP / "cases.csv").cases[1].to_json() | {"candidate_answer": "ok \ud800 then"}
    cases = _saved_jsonl(tmp_path / "saved", 2, json.dumps(case))
    code, out, _ = _rag_eval("score", "--cases", str(cases), "--out", str(tmp_path / "runs"), "--workers", workers)
    assert "Traceback" not in out and code == 2, out
    assert re.search(r"cases\.jsonl:2: candidate_answer: holds a lone surrogate U\+D800, which is not text", out)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_saved_line_nested_200000_deep_is_that_lines_problem(tmp_path):
    cases = _saved_jsonl(tmp_path / "saved", 3, '{"case_id": "W03", "question": ' + "[" * 200_000 + "]" * 200_000
                         + "}")
    code, out, _ = _rag_eval("score", "--cases", str(cases), "--out", str(tmp_path / "runs"), "--workers", "1")
    assert "Traceback" not in out and code == 2, out
    assert "cases.jsonl:3: (json): nested too deeply to read" in out


@pytest.mark.parametrize(("question", "problem"), [
    ("[" * 200_000 + "]" * 200_000, "cases.jsonl:2: nested too deeply to read as JSON (over about 1,000 levels)"),
    ('"How \\ud800 many?"', "cases.jsonl:2: question: holds a lone surrogate U+D800, which is not text")])
def test_a_cases_file_line_nested_too_deep_or_not_text_is_that_lines_problem(tmp_path, question, problem):
    cases = tmp_path / "cases.jsonl"
    lines = (REPO / "sample_docs" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = '{"id": "X", "question": ' + question + "}"
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for extra in (["check"], ["run", "--offline", "--out", str(tmp_path / "runs")]):  # run: refused before its
        code, out, _ = _rag_eval(*extra, "--docs", str(HANDBOOK), "--cases", str(cases))  # folder, not mid-run
        assert "Traceback" not in out and code == 2, out
        assert problem in out
        assert not (tmp_path / "runs").exists()


def test_a_pdf_with_an_unknown_encryption_version_is_one_line(tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(HANDBOOK))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    path = tmp_path / "docs" / "locked.pdf"
    path.parent.mkdir()
    writer.write(path)
    data = path.read_bytes()
    assert data.count(b"/V 2") == 1
    path.write_bytes(data.replace(b"/V 2", b"/V 9"))  # a version pypdf does not know
    code, out, _ = _rag_eval("check", "--docs", str(path), "--cases", sample_cases(tmp_path))
    line = _one_error_line(out)
    assert code == 2, out
    assert f"{path}: encrypted with an algorithm pypdf cannot read (Encryption V=9 NOT supported)" in line
    assert "save an unencrypted copy" in line


# ---------------------------------------------------------------- token counts and proxies (in this process)

def test_a_token_count_that_times_out_falls_back_to_the_estimate_and_is_not_asked_again(tmp_path, server):
    server.openai.kind = "llama.cpp"
    server.wire_fault, server.wire_paths = "drip_body", ("/v1/chat/completions/input_tokens",)
    settings = RunSettings(docs=str(HANDBOOK), cases=sample_cases(tmp_path), out=str(tmp_path / "runs"), limit=3,
                           host=server.url + "/v1", backend="openai", retries=0, timeout=2.0)
    started = time.monotonic()
    rows = read_rows(run_evaluation(settings).run_dir)
    assert [r.error for r in rows] == [None, None, None]  # the estimate took over, as after a 404
    assert server.count("/v1/chat/completions/input_tokens") == 1  # one timeout, then never asked again
    assert time.monotonic() - started < 2.0 * 2 + 10


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_model_servers_are_reached_directly_whatever_the_proxy_variables_say(server, monkeypatch, backend):
    with FakeOllama(host="127.0.0.2") as proxy:  # any request to it would be recorded
        for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
            monkeypatch.setenv(name, proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        host = server.url + ("/v1" if backend == "openai" else "")
        info = connect(ClientSettings(host=host, backend=backend, retries=0)).identify(
            chat_model="qwen3:4b", embed_model=None)
        assert info.host == host and "qwen3:4b" in info.models
        assert proxy.requests == [] and server.count() > 0
