"""Every sub-command, flag and positional argument of both CLIs has help text, and help shows the code's
defaults (issue #11 item 28; #10: flags declared once)."""

from __future__ import annotations

import argparse

import pytest

from chatbot.answer import AnswerSettings
from chatbot.cli import build_parser as rag_chat
from harness.cli import build_parser as rag_eval
from harness.cli import main


def _missing(parser: argparse.ArgumentParser, name: str) -> list[str]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for sub, subparser in action.choices.items():
                if not helps.get(sub):
                    out.append(f"{name} {sub}")
                out += _missing(subparser, f"{name} {sub}")
        elif not action.help and action.dest != "help":
            out.append(f"{name} {action.option_strings or action.dest}")
    return out


@pytest.mark.parametrize("build, name", [(rag_eval, "rag-eval"), (rag_chat, "rag-chat")])
def test_everything_has_help(build, name):
    assert _missing(build(), name) == []


def test_help_shows_the_defaults_of_the_code(capsys):
    with pytest.raises(SystemExit):
        rag_eval().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default {AnswerSettings().num_ctx})" in text
    assert f"(default {AnswerSettings().max_reply_chars})" in text


def test_rag_eval_run_flags_default_to_none_so_a_config_can_fill_them():
    args = rag_eval().parse_args(["run"])
    assert args.num_ctx is None and args.chunk_size is None and args.timeout is None
    chat_args = rag_chat().parse_args(["ask", "q"])
    assert chat_args.num_ctx == AnswerSettings().num_ctx


@pytest.mark.parametrize("argv, usage, hint", [
    (["run", "--chunk-sise", "500"], "usage: rag-eval run", "did you mean --chunk-size?"),
    (["draft", "review", "drafts.jsonl", "--reviwer", "ann"], "usage: rag-eval draft", "did you mean --reviewer?"),
    (["compare", "a", "b", "--fail-if-wrose", "passed"], "usage: rag-eval compare", "did you mean --fail-if-worse?"),
])
def test_a_mistyped_flag_shows_its_sub_commands_usage_and_the_closest_flag(argv, usage, hint, capsys):
    """The did-you-mean is the first line, the sub-command's usage after it (issue #44: it came after 40 lines)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    first, rest = capsys.readouterr().err.split("\n", 1)
    assert stopped.value.code == 2 and "error: unrecognized arguments" in first and hint in first
    assert rest.startswith(usage)
