"""The answer cache: keys, storage rules, and the caching generator against the test server."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from chatbot.answer import ANSWER_SCHEMA, AnswerSettings, render_prompt
from chatbot.answer_cache import CachingGenerator
from chatbot.bot import open_chatbot
from pdfrag.errors import InputError
from pdfrag.ollama_client import ChatReply, ClientSettings
from pdfrag.reply_cache import MAX_REPLY_CHARS, AnswerCache, reply_key
from tests.conftest import HANDBOOK

HOTEL_Q = "What is the hotel reimbursement limit per night?"
KEY = {"model_digest": "d" * 64, "prompt": "Question: x",
       "options": {"temperature": 0.0, "seed": 42, "num_ctx": 8192, "num_predict": 4096},
       "think": True, "format": ANSWER_SCHEMA, "repeat": 0}
REPLY = ChatReply("{\"answer\": \"x\", \"citations\": []}", "because", "stop", 12, 5, 950.5, 1.0, 10.0, 900.0, 1)


def bot_for(server, **settings):
    return open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url, backoff_s=0.0),
                        settings=AnswerSettings(**settings))


@pytest.mark.parametrize("change", [
    {"model_digest": "e" * 64}, {"prompt": "Question: y"}, {"think": False}, {"think": None}, {"format": "json"},
    {"repeat": 1}, {"options": KEY["options"] | {"seed": 43}}, {"options": KEY["options"] | {"num_ctx": 4096}},
    {"options": KEY["options"] | {"num_predict": 100}}, {"options": KEY["options"] | {"temperature": 0.7}},
])
def test_every_part_of_the_request_is_in_the_key(change):
    assert reply_key(**(KEY | change)) != reply_key(**KEY)


def test_numbers_count_by_value_and_option_order_does_not_matter():
    same = dict(reversed(list(KEY["options"].items()))) | {"temperature": 0, "seed": 42.0}
    assert reply_key(**(KEY | {"options": same})) == reply_key(**KEY)
    assert len(reply_key(**KEY)) == 64


@pytest.mark.parametrize("change, message", [({"model_digest": ""}, "digest"), ({"repeat": -1}, "repeat index"),
                                             ({"repeat": True}, "repeat index")])
def test_key_refuses_what_would_collide(change, message):
    with pytest.raises(InputError, match=message):
        reply_key(**(KEY | change))


def test_round_trip_keeps_latency_and_usage(tmp_path):
    cache = AnswerCache(tmp_path / "answers")
    key = reply_key(**KEY)
    assert cache.get(key) is None and key not in cache
    assert cache.put(key, REPLY, about={"model": "qwen3:4b"})
    # a new instance (another run) finds it, marked as coming from the cache
    assert AnswerCache(tmp_path / "answers").get(key) == dataclasses.replace(REPLY, cached=True)
    assert key in cache
    assert list((tmp_path / "answers").rglob("*.tmp")) == []


@pytest.mark.parametrize("bad", [
    {"total_ms": math.nan}, {"eval_ms": math.inf}, {"load_ms": -1.0}, {"output_tokens": -3},
    {"content": "x" * (MAX_REPLY_CHARS + 1)}, {"content": "x" * MAX_REPLY_CHARS, "thinking": "y"},
])
def test_unfit_replies_are_never_stored(tmp_path, bad):
    cache = AnswerCache(tmp_path)
    key = reply_key(**KEY)
    assert cache.put(key, dataclasses.replace(REPLY, **bad)) is False
    assert cache.get(key) is None and not any(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("damage", [
    lambda text: text[: len(text) // 2],  # cut by a crash before atomic writes, or by a full disk
    lambda text: "[]",
    lambda text: text.replace('"format": 1', '"format": 99'),
    lambda text: text.replace('"total_ms": 950.5', '"total_ms": "slow"'),
    lambda text: text.replace('"retries": 1', '"retries": 1, "extra": 2'),
    lambda text: text.replace('"key": "', '"key": "0'),  # an entry copied to another key's place
])
def test_damaged_entries_read_as_missing(tmp_path, damage):
    cache = AnswerCache(tmp_path)
    key = reply_key(**KEY)
    cache.put(key, REPLY)
    path = next(tmp_path.rglob(f"{key}.json"))
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert cache.get(key) is None


def test_default_location_is_under_the_cache_dir(tmp_path):
    assert AnswerCache.default().root == tmp_path / "cache" / "answers"  # conftest sets $PDF_RAG_EVAL_CACHE
    assert AnswerCache.default(tmp_path / "mine").root == tmp_path / "mine" / "answers"  # --cache-dir is the root


def test_cached_answer_makes_no_chat_request(server, tmp_path):
    bot = bot_for(server)
    bot.generator = CachingGenerator(bot.generator, AnswerCache.default())  # the one-line wiring
    first = bot.ask(HOTEL_Q)
    assert len(server.chat_bodies()) == 1
    again = bot_for(server)  # a later run, new objects, same cache folder
    again.generator = CachingGenerator(again.generator, AnswerCache.default())
    second = again.ask(HOTEL_Q)
    assert len(server.chat_bodies()) == 1, "a cache hit must not reach the server"
    assert first.status == second.status == "answered"
    assert (first.usage.pop("cached"), second.usage.pop("cached")) == (False, True)
    assert (second.raw, second.usage) == (first.raw, first.usage)  # original latency and tokens, not 0
    assert second.usage["total_ms"] > 0
    assert (bot.generator.misses, again.generator.hits, again.generator.misses) == (1, 1, 0)


def test_repeat_index_and_options_make_distinct_calls(server):
    bot = bot_for(server)
    base = CachingGenerator(bot.generator, AnswerCache.default())
    for repeat in range(3):
        bot.generator = base.with_repeat(repeat)
        bot.ask(HOTEL_Q)
    assert len(server.chat_bodies()) == 3
    bot.generator = base.with_repeat(1)
    bot.ask(HOTEL_Q)
    assert len(server.chat_bodies()) == 3
    warmer = bot_for(server, temperature=0.7)
    warmer.generator = CachingGenerator(warmer.generator, AnswerCache.default())
    warmer.ask(HOTEL_Q)
    assert len(server.chat_bodies()) == 4
    assert [b["options"]["temperature"] for b in server.chat_bodies()] == [0.0, 0.0, 0.0, 0.7]


def test_think_is_keyed_as_sent(server):
    bot = bot_for(server)  # think "auto": the test server's qwen3:4b reports thinking, so True is sent
    caching = CachingGenerator(bot.generator, AnswerCache.default())
    settings = bot.settings
    assert caching.key("p", settings, []) == caching.key("p", dataclasses.replace(settings, think=True), [])
    assert caching.key("p", settings, []) != caching.key("p", dataclasses.replace(settings, think=False), [])


def test_a_generator_without_digest_is_refused(tmp_path):
    class NoDigest:
        model, digest = "offline", ""

    with pytest.raises(InputError, match="no model digest"):
        CachingGenerator(NoDigest(), AnswerCache(tmp_path))


def test_entry_is_readable_json_with_the_key(tmp_path):
    cache = AnswerCache(tmp_path)
    key = reply_key(**KEY)
    cache.put(key, REPLY, about={"model": "qwen3:4b"})
    entry = json.loads(next(tmp_path.rglob("*.json")).read_text(encoding="utf-8"))
    assert (entry["key"], entry["about"], entry["reply"]["total_ms"]) == (key, {"model": "qwen3:4b"}, 950.5)


def test_concurrent_askers_of_one_key_make_one_request_and_thinking_is_still_counted(server):
    # The test server waits 0.3 s per reply, so four threads asking the same prompt overlap; only the first asks.
    import threading
    server.delay_s = 0.3
    bot = bot_for(server)
    inner = bot.generator
    caching = CachingGenerator(inner, AnswerCache.default())
    hits = bot.retriever.retrieve(HOTEL_Q, 2)
    prompt = render_prompt(bot.template, HOTEL_Q, hits)
    replies = []
    threads = [threading.Thread(target=lambda: replies.append(caching.generate(prompt, bot.settings, HOTEL_Q, hits)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.chat_bodies()) == 1 and len({r.content for r in replies}) == 1
    assert (caching.misses, caching.hits) == (1, 3)
    assert caching.thinks(bot.settings) == inner.thinks(bot.settings) is True  # qwen3:4b reports thinking
