"""Issue #19 items 8 and 10: an answer cache that cannot be written is a warning, never error rows; rows say which
answers came from the cache (`usage.cached`)."""

from __future__ import annotations

import dataclasses

from harness.cli import main
from harness.runs import read_rows
from pdfrag.ollama_client import ChatReply
from pdfrag.reply_cache import AnswerCache, reply_key
from tests.conftest import HANDBOOK, sample_cases

KEY = {"model_digest": "d" * 64, "options": {"seed": 1}, "think": None, "format": None, "repeat": 0}
REPLY = ChatReply('{"answer": "x", "citations": []}', "", "stop", 12, 5, 950.5, 1.0, 10.0, 900.0, 0)


def _run(server, tmp_path, label):
    out = tmp_path / "out"
    code = main(["run", "--host", server.url, "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                 "--out", str(out), "--label", label, "--answer-cache", "--cache-dir", str(tmp_path / "cache")])
    return code, next(p for p in out.iterdir() if p.name.endswith(label))


def test_rows_say_which_answers_came_from_the_answer_cache(server, tmp_path):
    _, first = _run(server, tmp_path, "first")
    asked = len(server.chat_bodies())
    _, second = _run(server, tmp_path, "second")
    assert len(server.chat_bodies()) == asked  # every answer of the second run came from the cache
    chatted = [r for r in read_rows(first) if "total_ms" in r.usage]  # rows whose case reached the model
    assert chatted and all(r.usage["cached"] is False for r in chatted)
    again = {r.case_id: r for r in read_rows(second)}
    assert all(again[r.case_id].usage["cached"] is True for r in chatted)
    assert all(again[r.case_id].usage["total_ms"] == r.usage["total_ms"] for r in chatted)  # the filling call's


def test_an_unwritable_answer_cache_warns_once_and_every_case_is_answered(server, tmp_path, capsys):
    # A file where the answers folder should be: every write fails with a real OSError, as a read-only folder does
    # for a user who is not root (the tests run as root, which a chmod would not stop).
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "answers").write_text("not a folder")
    code, run = _run(server, tmp_path, "ro")
    err = capsys.readouterr().err
    rows = read_rows(run)
    assert code in (0, 3) and not any(r.error for r in rows)
    assert err.count("answer cache") == 1 and "cannot be written" in err and "--cache-dir" in err
    assert all(r.usage.get("cached") is False for r in rows if "total_ms" in r.usage)


def test_a_cache_that_fails_to_write_keeps_serving_what_it_holds(tmp_path):
    cache = AnswerCache(tmp_path / "answers")
    held = reply_key(prompt="held", **KEY)
    assert cache.put(held, REPLY)
    fresh = reply_key(prompt="fresh", **KEY)
    assert fresh[:2] != held[:2]
    (tmp_path / "answers" / fresh[:2]).write_text("a file where the entry's folder goes: writing fails")
    assert cache.put(fresh, REPLY) is False and "cannot be written" in (cache.problem or "")
    assert cache.get(held) == dataclasses.replace(REPLY, cached=True) and cache.get(fresh) is None
