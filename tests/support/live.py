"""What the live tiers (`-m ollama`, `-m openai`) check on a real server's output: contracts, never wording."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chatbot.answer import STATUSES
from harness.rows import validate_row
from harness.runs import read_rows


def check_query_and_document_vectors(vectors: np.ndarray) -> None:
    """The two vectors of "search_query: hotel limit" and "search_document: hotel limit": unit length, and the
    task prefix matters."""
    assert vectors.shape[0] == 2 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    assert not np.allclose(vectors[0], vectors[1])


def check_rows(run_dir: Path, expected: int) -> None:
    """Every row of a live run matches the row schema, has a known status, and an answered row cites validly."""
    rows = read_rows(run_dir)
    assert len(rows) == expected > 0
    for row in rows:
        validate_row(row.to_json())
        assert row.answer.status in STATUSES
        if row.answer.status == "answered":
            assert all(c.valid for c in row.answer.citations)
