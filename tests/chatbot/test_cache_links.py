"""Issue #27 item 7, the caches beside the page-text cache (tests/pdfrag/test_page_cache.py): a subfolder of the
embedding, answer or draft-reply cache replaced by a symbolic link to an outside folder is never written or read
through, and an entry edited by hand is not served."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chatbot.index import EmbeddingCache
from pdfrag.asking import ParsedReplies, Replied
from pdfrag.ollama_client import ChatReply
from pdfrag.reply_cache import AnswerCache, reply_key
from pdfrag.safe_files import UnsafeFile

KEY = "ab" + "0" * 62
REPLY = ChatReply(content='{"answer": "EUR 160", "citations": []}', thinking="", done_reason="stop",
                  prompt_tokens=10, output_tokens=5, total_ms=12.5, load_ms=None, prompt_eval_ms=None, eval_ms=None,
                  retries=0)


def _planted(root: Path, key: str, name: str, outside: Path) -> Path:
    """`root/<key[:2]>` as a link to `outside`, which holds a file `name` planted there; returns that file."""
    outside.mkdir(exist_ok=True)
    planted = outside / name
    planted.write_text("planted", encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    (root / key[:2]).symlink_to(outside)
    return planted


def _untouched(outside: Path, planted: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == [planted.name]
    assert planted.read_text(encoding="utf-8") == "planted"


def test_the_embedding_cache_refuses_a_linked_subfolder(tmp_path):
    root, outside = tmp_path / "embeddings", tmp_path / "outside"
    planted = _planted(root, KEY, f"{KEY}.npy", outside)
    cache = EmbeddingCache(root)
    assert cache.get(KEY) is None
    with pytest.raises(UnsafeFile, match="is a symbolic link"):
        cache.put(KEY, np.ones(4, dtype=np.float32))
    _untouched(outside, planted)


def test_the_answer_cache_refuses_a_linked_subfolder_with_one_warning(tmp_path):
    root, outside = tmp_path / "answers", tmp_path / "outside"
    key = reply_key(model_digest="d", prompt="p", options={}, think=None, format=None, repeat=0)
    planted = _planted(root, key, f"{key}.json", outside)
    cache = AnswerCache(root)
    assert cache.get(key) is None and cache.put(key, REPLY) is False
    assert "cannot be written" in (cache.problem or "") and "is a symbolic link" in (cache.problem or "")
    _untouched(outside, planted)


def test_the_draft_reply_store_refuses_a_linked_subfolder(tmp_path):
    root, outside = tmp_path / "draft-replies", tmp_path / "outside"
    planted = _planted(root, KEY, f"{KEY}.json", outside)
    store = ParsedReplies(root)
    assert store.get(KEY, {}) is None
    with pytest.raises(UnsafeFile, match="is a symbolic link"):
        store.put(KEY, None, Replied({"answer": "x"}), REPLY, "prompt")
    _untouched(outside, planted)


def test_the_draft_reply_store_writes_atomically_and_leaves_no_temporary_file(tmp_path):
    store = ParsedReplies(tmp_path)
    store.put(KEY, None, Replied({"answer": "x"}), REPLY, "prompt")
    assert [p.name for p in (tmp_path / KEY[:2]).iterdir()] == [f"{KEY}.json"]
    assert store.get(KEY, {}) == Replied({"answer": "x"}, from_cache=True)


def test_an_edited_answer_or_draft_reply_is_not_served(tmp_path):
    answers = AnswerCache(tmp_path / "answers")
    key = reply_key(model_digest="d", prompt="p", options={}, think=None, format=None, repeat=0)
    assert answers.put(key, REPLY)
    path = tmp_path / "answers" / key[:2] / f"{key}.json"
    entry = json.loads(path.read_text(encoding="utf-8"))
    entry["reply"]["content"] = entry["reply"]["content"].replace("160", "999")
    path.write_text(json.dumps(entry), encoding="utf-8")
    assert answers.get(key) is None and answers.discarded == 1
    del entry["reply_sha256"]  # an entry from before the digest is served as it is
    path.write_text(json.dumps(entry), encoding="utf-8")
    assert answers.get(key) is not None
    drafts = ParsedReplies(tmp_path / "draft-replies")
    drafts.put(KEY, None, Replied({"answer": "160"}), REPLY, "prompt")
    stored = tmp_path / "draft-replies" / KEY[:2] / f"{KEY}.json"
    stored.write_text(stored.read_text(encoding="utf-8").replace("160", "999"), encoding="utf-8")
    assert drafts.get(KEY, {}) is None
