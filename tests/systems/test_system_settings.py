"""The bundled chatbot declares the settings it is built from (`chatbot.settings.BotSettings`); the run carries
them by the same flat names (`harness.settings.RunSettings`) without importing the bot, and the adapter turns them
into the bot's records (issue #42 item 2)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields

import pytest

from chatbot.answer import AnswerSettings
from chatbot.settings import BotSettings
from harness.drafting.settings import DraftSettings
from harness.settings import FIELDS, RunSettings, resolve
from harness.systems.chatbot import bot_settings
from pdfrag.errors import InputError
from tests.conftest import REPO

BOT_FIELDS = [f.name for f in fields(BotSettings)]


def test_the_run_carries_every_setting_the_bot_declares_by_its_name():
    assert set(BOT_FIELDS) <= set(FIELDS)


@pytest.mark.parametrize("name", BOT_FIELDS)
def test_the_runs_default_is_the_bots(name):
    """The run's defaults are written in harness/settings.py (a run's settings are read without loading the bot);
    this keeps each one equal to the bot's declaration."""
    assert getattr(RunSettings(), name) == getattr(BotSettings(), name)


def test_drafting_asks_with_the_context_the_bot_answers_with():
    assert (DraftSettings().num_ctx, DraftSettings().num_predict) == (BotSettings().num_ctx, BotSettings().num_predict)


def test_the_bots_declaration_defaults_to_its_own_records():
    answering, default = BotSettings().answering(), AnswerSettings()
    assert answering == default and BotSettings().embedding().model == "nomic-embed-text"


def test_the_adapter_hands_the_runs_values_to_the_bot():
    s = RunSettings(top_k=6, chunk_size=800, chunk_overlap=100, think="off", min_quote_words=6, batch_size=8,
                    retriever="hybrid", prompt="p.txt", k=(1,))
    built = bot_settings(s)
    assert (built.chunking().size_chars, built.chunking().overlap_chars) == (800, 100)
    answering = built.answering()
    assert (answering.top_k, answering.think, answering.min_quote_words, answering.retriever,
            answering.prompt_path) == (6, False, 6, "hybrid", "p.txt")
    assert built.embedding().batch_size == 8


@pytest.mark.parametrize("flags, says", [({"retriever": "hybird"}, "retriever must be dense, bm25 or hybrid"),
                                         ({"max_reply_chars": 0}, "max-reply-chars must be at least 1, got 0")])
def test_a_value_the_bot_refuses_is_refused_when_the_run_is_resolved(flags, says):
    with pytest.raises(InputError, match=says):
        resolve(flags)


def test_reading_the_run_settings_loads_no_chatbot():
    """`harness.settings` and `harness.drafting.settings` stand without the bot (the report reads settings)."""
    code = ("import sys, harness.settings, harness.drafting.settings\n"
            "print(sorted(n for n in sys.modules if n.split('.')[0] == 'chatbot'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "[]"
