"""Live tier: the OpenAI-compatible backend against a real server. Run with `pytest -m openai`; skipped unless
$OPENAI_BASE_URL is set (the base URL ending in /v1, e.g. vLLM's http://127.0.0.1:8000/v1).

Models: $OPENAI_CHAT_MODEL (default qwen3:4b, Ollama's /v1 name; for vLLM e.g. Qwen/Qwen3-4B) and
$OPENAI_EMBED_MODEL (default nomic-embed-text). When embeddings are served elsewhere (vLLM and llama.cpp serve one
model per process), set $OPENAI_EMBED_BASE_URL. The key, if the server needs one, comes from $OPENAI_API_KEY.
$OPENAI_LIVE_LIMIT (the first N sample cases) and $OPENAI_LIVE_NUM_PREDICT (--num-predict) make the run fit a
small model on a slow machine: CI runs this tier so against the engine tier's llama-server
(`python -m tests.engine.engine live python -m pytest -m openai`).
A model's answers vary, so these tests check contracts (statuses, schemas, identity), never wording.
"""

import pytest

from harness.evaluate import run_evaluation
from harness.settings import RunSettings
from pdfrag.model_server import NAME_ONLY, ClientSettings, preflight
from pdfrag.openai_client import OpenAIClient
from tests.conftest import HANDBOOK, LIVE_OPENAI, SAMPLE_DOCS
from tests.support.live import check_query_and_document_vectors, check_rows

pytestmark = [pytest.mark.openai,
              pytest.mark.skipif(not LIVE_OPENAI["base_url"], reason="OPENAI_BASE_URL is not set")]


def _settings(host: str | None) -> ClientSettings:
    return ClientSettings(host=host, backend="openai", timeout_s=600, connect_timeout_s=3, retries=1)


def test_identity_and_embeddings():
    embed_url = LIVE_OPENAI["embed_base_url"] or LIVE_OPENAI["base_url"]
    embedder = OpenAIClient(_settings(embed_url))
    info = preflight(embedder, chat_model=None, embed_model=LIVE_OPENAI["embed_model"])
    assert info.to_dict()["identity"] == NAME_ONLY and len(info.models[LIVE_OPENAI["embed_model"]].digest) == 64
    vectors = embedder.embed(LIVE_OPENAI["embed_model"], ["search_query: hotel limit", "search_document: hotel limit"])
    check_query_and_document_vectors(vectors)


def test_evaluation_of_the_sample_writes_valid_rows(tmp_path):
    result = run_evaluation(RunSettings(
        docs=str(HANDBOOK), cases=str(SAMPLE_DOCS / "cases.jsonl"), out=str(tmp_path), backend="openai",
        host=LIVE_OPENAI["base_url"], embed_host=LIVE_OPENAI["embed_base_url"], timeout=600,
        chat_model=LIVE_OPENAI["chat_model"], embed_model=LIVE_OPENAI["embed_model"], **_small()))
    check_rows(result.run_dir, result.summary.rows)
    if LIVE_OPENAI["limit"]:
        assert result.summary.rows == int(LIVE_OPENAI["limit"])
    assert result.manifest.system.model_server["identity"] == NAME_ONLY


def _small() -> dict:
    """RunSettings from $OPENAI_LIVE_LIMIT and $OPENAI_LIVE_NUM_PREDICT, where they are set."""
    return {name: int(LIVE_OPENAI[name]) for name in ("limit", "num_predict") if LIVE_OPENAI[name]}
