"""Question vectors embedded in batches on demand: one embedding request per `batch_size` questions of a run
instead of one per question.

The questions are known before a run answers them. They are cut, in order, into batches; the first worker that
needs a question's vector embeds that question's whole batch (the others of the batch wait for it and read the
result), so batches are asked as the answering reaches them and several can be in flight at once. A batch that
fails in any way is not retried here: each of its questions is then embedded alone by its own case, exactly as
without batching, so a per-question error (too long, a broken vector) still lands on that question's row.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["QuestionBatches"]


class QuestionBatches:
    """`vector(question)`: the question's vector from its batch, or None when the batch failed or the question
    was not given (the caller then embeds it alone). `embed_many(texts)` returns one row per text."""

    def __init__(self, embed_many: Callable[[list[str]], np.ndarray], questions: Sequence[str], batch_size: int):
        distinct = list(dict.fromkeys(questions))
        self._embed_many = embed_many
        self._batches = [distinct[i:i + batch_size] for i in range(0, len(distinct), max(batch_size, 1))]
        self._batch_of = {q: i for i, batch in enumerate(self._batches) for q in batch}
        self._locks = [threading.Lock() for _ in self._batches]
        self._vectors: dict[int, dict[str, np.ndarray] | None] = {}

    @property
    def requests(self) -> int:
        """Batches asked so far, failed ones included."""
        return len(self._vectors)

    def vector(self, question: str) -> np.ndarray | None:
        index = self._batch_of.get(question)
        if index is None:
            return None
        with self._locks[index]:
            if index not in self._vectors:
                self._vectors[index] = self._embed(self._batches[index])
        found = self._vectors[index]
        return None if found is None else found[question]

    def _embed(self, batch: list[str]) -> dict[str, np.ndarray] | None:
        try:
            rows = self._embed_many(batch)
        except Exception:  # noqa: BLE001 - every question of the batch is asked alone, where its error belongs
            return None
        return dict(zip(batch, rows))
