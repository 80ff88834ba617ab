"""The run's questions are embedded in batches (`--batch-size` per request) as the answering reaches them, and the
rows are the same as when every question is embedded alone, failures included (it cuts the harness's CPU per case:
bench/bench_openai.py)."""

from __future__ import annotations

import pytest

from harness.evaluate import run_evaluation
from harness.runs import read_rows
from harness.settings import RunSettings
from harness.systems.chatbot import ChatbotSystem
from tests.conftest import HANDBOOK, sample_cases

# What may differ between two runs of the same setup: timings.
TIMINGS = {"usage.elapsed_ms", "usage.total_ms", "usage.load_ms", "usage.prompt_eval_ms", "usage.eval_ms"}
EMBED_PATH = {"ollama": "/api/embed", "openai": "/v1/embeddings"}


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict):
        return {k: v for key, item in value.items()
                for k, v in _flat(item, f"{prefix}.{key}" if prefix else key).items()}
    return {prefix: value}


def _run(server, tmp_path, label: str, backend: str = "ollama", cache: str = "cache") -> list:
    settings = RunSettings(docs=str(HANDBOOK), cases=sample_cases(tmp_path), out=str(tmp_path / label),
                           host=server.url + ("/v1" if backend == "openai" else ""), backend=backend, workers=4,
                           batch_size=8, backoff=0.0, retries=0, cache_dir=str(tmp_path / cache))
    return read_rows(run_evaluation(settings).run_dir)


def _question_batches(server, backend: str = "ollama") -> list[list[str]]:
    return [b["input"] for b in server.bodies(EMBED_PATH[backend])
            if all(t.startswith("search_query: ") for t in b["input"])]


def _differing(a: list, b: list) -> set[str]:
    assert [r.case_id for r in a] == [r.case_id for r in b]
    out: set[str] = set()
    for x, y in zip(a, b):
        fx, fy = _flat(x.model_dump(mode="json")), _flat(y.model_dump(mode="json"))
        out |= {k for k in fx.keys() | fy.keys() if fx.get(k) != fy.get(k)}
    return out


def _one_by_one(monkeypatch) -> None:
    """Batching off: every question embedded alone, as before batching."""
    monkeypatch.setattr(ChatbotSystem, "questions_ahead", lambda self, questions: None)


@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_questions_are_embedded_batch_size_at_a_time_and_the_rows_are_the_same(server, tmp_path, monkeypatch,
                                                                               backend):
    batched = _run(server, tmp_path, "batched", backend)
    batches = _question_batches(server, backend)
    assert len(batched) == 21
    assert [len(b) for b in batches] == [8, 8, 5]  # 21 questions, --batch-size 8: three requests, not 21
    assert [t.removeprefix("search_query: ") for b in batches for t in b] == [r.question for r in batched]
    _one_by_one(monkeypatch)
    alone = _run(server, tmp_path, "alone", backend)
    assert [len(b) for b in _question_batches(server, backend)[3:]] == [1] * 21
    assert _differing(batched, alone) <= TIMINGS
    assert sum(not r.answer.abstained for r in batched) >= 10  # the rows compared are real answers


def test_a_failed_batch_leaves_its_questions_to_be_embedded_alone(server, tmp_path):
    first = _run(server, tmp_path, "first")  # fills the chunk vectors' cache: the next build embeds nothing
    before = len(_question_batches(server))
    server.break_next("nan", path="/api/embed")  # the first question batch gets a NaN vector
    again = _run(server, tmp_path, "again")
    sizes = sorted(len(b) for b in _question_batches(server)[before:])
    assert sizes[:8] == [1] * 8 and sizes[8:] in ([5, 8], [5, 8, 8])  # the broken batch's 8 questions alone
    assert _differing(first, again) <= TIMINGS


def test_a_question_whose_vector_is_broken_errors_on_its_own_row_as_before(server, tmp_path, monkeypatch):
    _run(server, tmp_path, "warm")  # the chunk vectors are cached, so the fault below only meets questions
    server.embed_fault = "short"  # every vector 384 wide against the index's 768
    batched = _run(server, tmp_path, "batched")
    _one_by_one(monkeypatch)
    alone = _run(server, tmp_path, "alone")
    assert all(r.errored and "expected a vector of 768 numbers" in str(r.error) for r in batched)
    assert _differing(batched, alone) <= TIMINGS
