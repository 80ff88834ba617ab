"""Counting a dry run's calls is a capability of the system (`CountsCalls`, beside its traits): the dry run asks
each cell's system, adds up what the counting systems say, and lists the cells of the others as not counted; the
bundled chatbot counts its own (issue #42 item 2)."""

from __future__ import annotations

import pytest

from harness.cases import load_cases
from harness.settings import RunSettings
from harness.sweep.dry import count_calls
from harness.systems import CallCount, CountsCalls
from harness.systems.calls import plan_calls
from harness.systems.chatbot import ChatbotSystem
from harness.systems.http import HttpSystem
from harness.systems.interface import CallPlan, EmbedTiming
from harness.systems.loading import call_counter, counter_of
from harness.systems.offline import OfflineSystem
from tests.conftest import HANDBOOK, sample_cases


class Plain:
    """A plug-in without the capability."""

    def describe(self) -> dict:
        return {"name": "plain"}


class Counting:
    """A plug-in class that counts its calls: one chat call per question asked, none cached, nothing embedded."""

    asked: list[list[str]] = []

    @staticmethod
    def count_calls(cells, read):
        Counting.asked.append([label for label, _ in cells])
        questions = [q for _, s in cells for q in read(s)[1]]
        return CallCount(CallPlan(0, 0, len(questions), 0),
                         EmbedTiming(chunks_needed=1, seconds_per_chunk=0.5, chars=10, model="m"))


def test_a_system_counts_its_calls_when_its_class_says_so():
    assert counter_of(ChatbotSystem) is ChatbotSystem and isinstance(ChatbotSystem, CountsCalls)
    assert counter_of(Counting) is Counting
    assert counter_of(Plain) is None and counter_of(Plain()) is None and counter_of(HttpSystem) is None
    assert counter_of(OfflineSystem) is None  # it makes no model call: its traits say so (uses_model_servers)
    assert call_counter("chatbot") is ChatbotSystem
    assert [call_counter(spec) for spec in ("offline", "my_rag:build", "http://localhost:1/ask")] == [None] * 3


def _settings(tmp_path, system: str, **more) -> RunSettings:
    return RunSettings(docs=str(HANDBOOK), cases=sample_cases(tmp_path), system=system, **more)


def test_cells_of_a_system_without_the_capability_are_not_counted_and_the_others_added_up(tmp_path):
    Counting.asked.clear()
    cells = [("a", _settings(tmp_path, "mine:counts")), ("b", _settings(tmp_path, "theirs:plain")),
             ("c", _settings(tmp_path, "offline")), ("d", _settings(tmp_path, "mine:counts", repeat=2)),
             ("e", _settings(tmp_path, "http://localhost:1/ask"))]
    found = count_calls(cells, counter_for=lambda spec: Counting if spec == "mine:counts" else counter_of(Plain))
    assert Counting.asked == [["a", "d"]]  # one count for all the cells of one system, in their order
    questions = len(load_cases(sample_cases(tmp_path)))
    assert found.calls == CallPlan(0, 0, 2 * questions, 0)  # the cells' questions, read as their runs read them
    assert found.not_counted == ("b", "e")  # offline makes no model call: nothing to count, nothing to list
    assert found.embedding == EmbedTiming(1, 0.5, 10, "m")


def test_nothing_to_count_is_zero_calls_and_no_timing(tmp_path):
    found = count_calls([("c", _settings(tmp_path, "offline"))])
    assert (found.calls, found.not_counted, found.embedding) == (CallPlan(0, 0, 0, 0), (), None)


def test_the_chatbot_counts_its_cells_alike_among_other_systems(server, tmp_path):
    """The chatbot's count of its cells is the same whether other systems' cells share the sweep or not."""
    chatbot = [(f"top-k={k}", _settings(tmp_path, "chatbot", host=server.url, top_k=k, k=(1,))) for k in (1, 2)]
    alone = count_calls(chatbot)
    mixed = count_calls([chatbot[0], ("offline", _settings(tmp_path, "offline", host=server.url)),
                         ("plain", _settings(tmp_path, "theirs:plain")), chatbot[1]])
    assert (mixed.calls, mixed.not_counted) == (alone.calls, ("plain",))
    questions = len(load_cases(sample_cases(tmp_path)))
    assert alone.calls.chat_calls == 2 * questions and alone.calls.chat_cached == 0  # nothing cached: all unknown
    assert server.chat_bodies() == []  # counting asks no chat


def test_plan_calls_counts_distinct_calls_and_cached_ones():
    # two cells share the chunk texts "a" and "b"; their answers differ except for one shared prompt key
    embeds = [["a", "b", "c"], ["a", "b", "d"]]
    chats = [["p1#0", "p2#0"], ["p1#0", "p3#0", "p3#1"]]
    asked: list[str] = []

    def in_chat_cache(key: str) -> bool:
        asked.append(key)
        return key == "p2#0"

    plan = plan_calls(embeds, chats, embed_cached=lambda k: k in {"a", "d", "zz"}, chat_cached=in_chat_cache)
    assert plan == CallPlan(embed_texts=4, embed_cached=2, chat_calls=4, chat_cached=1)
    assert (plan.embed_needed, plan.chat_needed) == (2, 3)
    assert sorted(asked) == ["p1#0", "p2#0", "p3#0", "p3#1"]  # once per distinct key
    assert plan.to_dict()["chat_needed"] == 3


def test_plan_calls_counts_unknown_prompts_as_needed():
    plan = plan_calls([["a"]], [["p1#0"]], embed_cached=lambda k: True, chat_cached=lambda k: True, unknown_chats=6)
    assert (plan.chat_calls, plan.chat_cached, plan.chat_needed, plan.embed_needed) == (7, 1, 6, 0)
    with pytest.raises(ValueError, match="negative"):
        plan_calls([], [], embed_cached=bool, chat_cached=bool, unknown_chats=-1)
