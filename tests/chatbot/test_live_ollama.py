"""Live tier: the same checks against a real Ollama. Run with `pytest -m ollama`; skipped when none answers.

Uses $OLLAMA_HOST (default http://127.0.0.1:11434) and needs `ollama pull nomic-embed-text` and
`ollama pull qwen3:4b`. A model's answers vary, so these tests check contracts (statuses, schemas,
validation), never particular wording.
"""


import pytest

from harness.evaluate import run_evaluation
from harness.settings import RunSettings
from tests.conftest import HANDBOOK, LIVE_HOST, SAMPLE_DOCS
from tests.support.live import check_query_and_document_vectors, check_rows

pytestmark = pytest.mark.ollama


def test_preflight_and_embeddings(live):
    info, client = live
    assert info.version and len(info.models["nomic-embed-text"].digest) == 64
    vectors = client.embed("nomic-embed-text", ["search_query: hotel limit", "search_document: hotel limit"])
    check_query_and_document_vectors(vectors)


def test_evaluation_of_the_sample_writes_valid_rows(live, tmp_path):
    result = run_evaluation(RunSettings(docs=str(HANDBOOK), cases=str(SAMPLE_DOCS / "cases.jsonl"),
                                        out=str(tmp_path), host=LIVE_HOST, timeout=600))
    check_rows(result.run_dir, result.summary.rows)
    assert result.manifest.system.ollama["version"] == live[0].version
