"""Issue #42: an answer cache and a judge cache written by the code as it stood before the shared package was split
out of the chatbot (main at 155703e) are read after the move with zero new model calls.

`tests/fixtures/caches_before_the_move/` holds what a chatbot run with `--answer-cache` and a `rag-eval judge` of it
left in the cache folder (`answers/`, `judge-replies/`, `embeddings/`), made against the test server with the
sample handbook and cases. The same two commands over a copy of it ask the server nothing: no chat, no embedding.
A cache key that took a module path or a class's qualified name would miss here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.cli import main
from harness.review.store import read_reviews
from harness.runs import read_rows
from tests.conftest import HANDBOOK, REPO, sample_cases
from tests.support.judge_rules import judge_rule

FIXTURE = REPO / "tests" / "fixtures" / "caches_before_the_move"
MODEL_PATHS = ("/api/chat", "/api/embed", "/api/embeddings")


def run_and_judge(server, tmp_path: Path, cache: Path) -> Path:
    """A chatbot run of the sample cases with the answer cache, then the judge over it; the run's directory."""
    out = tmp_path / "runs"
    assert main(["run", "--host", server.url, "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                 "--out", str(out), "--label", "cached", "--answer-cache", "--cache-dir", str(cache)]) in (0, 3)
    run = next(out.iterdir())
    server.chat_rule = judge_rule()
    assert main(["judge", str(run), "--host", server.url, "--cache-dir", str(cache)]) == 0
    return run


def model_calls(server) -> int:
    """Requests that ask the model something: chats (model loads left out) and embeddings."""
    return len(server.chat_bodies()) + sum(server.count(path) for path in MODEL_PATHS[1:])


def test_the_fixture_holds_answers_judge_replies_and_embeddings():
    held = {p.name: len(list(p.rglob("*.json")) + list(p.rglob("*.npy"))) for p in FIXTURE.iterdir() if p.is_dir()}
    assert set(held) == {"answers", "judge-replies", "embeddings"} and all(held.values()), held


def test_caches_written_before_the_move_are_read_with_no_model_call(server, tmp_path):
    cache = tmp_path / "cache-before"
    shutil.copytree(FIXTURE, cache)
    run = run_and_judge(server, tmp_path, cache)
    assert model_calls(server) == 0
    rows = read_rows(run)
    answered = [r for r in rows if "total_ms" in r.usage]
    assert answered and all(r.usage["cached"] is True for r in answered)
    judged = [r for r in read_reviews(tmp_path / "sample-cases" / "cases.reviews.jsonl").reviews.values()]
    assert judged and {r.reviewer.split(":")[0] for r in judged} == {"judge"}


def test_an_empty_cache_asks_the_model(server, tmp_path):  # so that the test above cannot pass by asking nothing
    run_and_judge(server, tmp_path, tmp_path / "cache-empty")
    assert len(server.chat_bodies()) > 0 and model_calls(server) > len(server.chat_bodies())
