"""Live tier: the same checks against a real Ollama. Run with `pytest -m ollama`; skipped when none answers.

Uses $OLLAMA_HOST (default http://127.0.0.1:11434) and needs `ollama pull nomic-embed-text` and
`ollama pull qwen3:4b`. A model's answers vary, so these tests check contracts (statuses, schemas,
validation), never particular wording.
"""


import numpy as np
import pytest

from chatbot.answer import STATUSES
from harness.evaluate import run_evaluation
from harness.rows import validate_row
from harness.runs import read_rows
from harness.settings import RunSettings
from tests.conftest import HANDBOOK, LIVE_HOST, SAMPLE_DOCS

pytestmark = pytest.mark.ollama


def test_preflight_and_embeddings(live):
    info, client = live
    assert info.version and len(info.models["nomic-embed-text"].digest) == 64
    vectors = client.embed("nomic-embed-text", ["search_query: hotel limit", "search_document: hotel limit"])
    assert vectors.shape[0] == 2 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert not np.allclose(vectors[0], vectors[1])  # the prefix matters


def test_evaluation_of_the_sample_writes_valid_rows(live, tmp_path):
    result = run_evaluation(RunSettings(docs=str(HANDBOOK), cases=str(SAMPLE_DOCS / "cases.jsonl"),
                                        out=str(tmp_path), host=LIVE_HOST, timeout=600))
    rows = read_rows(result.run_dir)
    assert len(rows) == result.summary.rows > 0
    for row in rows:
        validate_row(row.to_json())
        assert row.answer.status in STATUSES
        if row.answer.status == "answered":
            assert all(c.valid for c in row.answer.citations)
    assert result.manifest.system.ollama["version"] == live[0].version
