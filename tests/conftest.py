"""Shared fixtures. Every test gets its own cache and results folders; nothing touches the user's home."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from pdfrag.errors import ModelServerError
from pdfrag.ollama_client import ClientSettings, OllamaClient, preflight, resolve_host
from tests.fake_ollama import FakeOllama

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "sample_docs"
# The one PDF that sample_docs/cases.jsonl is about; the folder also holds collection/ (its own cases).
HANDBOOK = SAMPLE_DOCS / "handbook.pdf"


def load_sample_script(name: str):
    """A script of sample_docs/ (not a package), imported by path: `load_sample_script("make_all_cases")`."""
    spec = importlib.util.spec_from_file_location(name, SAMPLE_DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while a class is being built
    spec.loader.exec_module(module)
    return module


pdfgen = load_sample_script("make_sample_docs")


def sample_cases(tmp_path: Path) -> str:
    """A private copy of the sample cases, so a reviews file a user saved beside the real one changes nothing."""
    copy = tmp_path / "sample-cases" / "cases.jsonl"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes((SAMPLE_DOCS / "cases.jsonl").read_bytes())
    return str(copy)


# The live tiers' servers, read at import: the autouse fixture below clears OLLAMA_HOST and the OPENAI_* variables
# for every test, so no default-tier test can reach a real server.
LIVE_HOST = resolve_host(os.environ.get("OLLAMA_HOST"))
LIVE_OPENAI = {"base_url": os.environ.get("OPENAI_BASE_URL"), "embed_base_url": os.environ.get("OPENAI_EMBED_BASE_URL"),
               "chat_model": os.environ.get("OPENAI_CHAT_MODEL", "qwen3:4b"),
               "embed_model": os.environ.get("OPENAI_EMBED_MODEL", "nomic-embed-text"),
               # a small model on a slow machine (the engine tier's servers): fewer cases, a smaller reply budget
               "limit": os.environ.get("OPENAI_LIVE_LIMIT"), "num_predict": os.environ.get("OPENAI_LIVE_NUM_PREDICT")}


@pytest.fixture(scope="module")
def live():
    """(ServerInfo, OllamaClient) of a real Ollama at $OLLAMA_HOST with both models, for `-m ollama` tests; the
    test is skipped when none answers."""
    client = OllamaClient(ClientSettings(host=LIVE_HOST, timeout_s=600, connect_timeout_s=3, retries=1))
    try:
        return preflight(client, chat_model="qwen3:4b", embed_model="nomic-embed-text"), client
    except ModelServerError as exc:
        pytest.skip(f"no usable Ollama at {LIVE_HOST}: {exc}")


@pytest.fixture
def drafts_file(server, tmp_path) -> Path:
    """Drafts of the handbook written by `rag-eval draft` against the test server's scripted rule
    (tests/support/draft_rules.py): the scripted answerable drafts only (`--unanswerable 0`), which the tests of
    review and cases count; the default share of unanswerable drafts is tested on its own."""
    from harness.cli import main
    from tests.support import draft_rules
    server.chat_rule = draft_rules.draft_rule
    out = tmp_path / "drafts.jsonl"
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(out), "--host", server.url,
                 "--unanswerable", "0"]) == 0
    return out


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("PDF_RAG_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    for name in ("OPENAI_BASE_URL", "OPENAI_EMBED_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    """An Ollama-compatible HTTP server on 127.0.0.1 (tests/fake_ollama.py): its chat replies follow the
    rule each test sets (default: `overlap_rule`, which quotes the passage sentence sharing most words with
    the question). It is not a model."""
    with FakeOllama() as fake:
        yield fake


@pytest.fixture
def make_pdf(tmp_path):
    """make_pdf("name.pdf", ["page 1 text", "page 2 text"]) -> path, written with pypdf."""
    def make(name: str, pages: list[str]) -> Path:
        path = tmp_path / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pdfgen.write_text_pdf(path, pages)
        return path
    return make
