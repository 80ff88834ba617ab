"""Issue #19 item 13: escape sequences from systems, PDFs and files never reach the terminal raw.

One function, `pdfrag.terminal.printable`, behind every print of the CLIs (`say`). Checked in a real terminal
(tmux) for `rag-chat pages`, and on the captured output of `rag-eval run`, `review` and `draft review`."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from harness.cli import main
from harness.drafting.records import read_drafts, write_drafts
from pdfrag.terminal import printable
from tests.conftest import REPO, SAMPLE_DOCS, sample_cases
from tests.support.sysfixtures import ESCAPES

RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def _clean(text: str) -> bool:
    return not any(c in text for c in RAW)


def test_printable_escapes_controls_and_bidi_but_keeps_text_tabs_and_newlines():
    assert printable(ESCAPES) == ("\\u001b]0;PWNED\\u0007\\u001b[2J\\u001b[Hall claims verified\\u202e "
                                  "\\u009b31m")
    assert printable("Straße\t€ 160\nnext ﬁ \u00e9") == "Straße\t€ 160\nnext ﬁ \u00e9"
    assert printable("a\rb\x00c\x7f\u2066\u200f") == "a\\u000db\\u0000c\\u007f\\u2066\\u200f"


needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install tmux)")


def _in_a_terminal(tmp_path, command: str) -> tuple[str, str]:
    """(screen text, window title) after `command` ran in a real terminal (tmux, 200 x 50)."""
    socket = str(tmp_path / "tmux.sock")
    script = tmp_path / "show.sh"
    script.write_text(f"echo BEFORE; {command}; echo DONE; sleep 30\n")
    tmux = ["tmux", "-S", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", "200", "-y", "50", "-s", "t", f"sh {script}"], check=True,
                   cwd=REPO)
    try:
        screen = ""
        for _ in range(200):
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-S", "-", "-t", "t"], capture_output=True,
                                    text=True).stdout  # with the lines scrolled off
            if "DONE" in screen:
                break
            time.sleep(0.1)
        title = subprocess.run([*tmux, "display-message", "-p", "-t", "t", "#{pane_title}"], capture_output=True,
                               text=True).stdout.strip()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    assert "DONE" in screen, screen
    assert "BEFORE" in screen, screen  # the screen was not cleared
    return screen, title


@needs_tmux
def test_rag_chat_pages_in_a_real_terminal_neither_retitles_nor_clears_it(make_pdf, tmp_path):
    pdf = make_pdf("evil.pdf", ["Opening words \x1b]2;PWNED\x07 \x1b[2J\x1b[Hall claims verified. More text."])
    screen, title = _in_a_terminal(tmp_path, f"{sys.executable} -m chatbot.cli pages {pdf.parent}")
    assert "Opening words \\u001b]2;PWNED\\u0007 \\u001b[2J\\u001b[Hall claims verified" in screen
    assert title != "PWNED"


@pytest.fixture
def escaping_run(tmp_path, capsys):
    cases = sample_cases(tmp_path)
    code = main(["run", "--system", "tests.support.sysfixtures:escaping", "--docs", str(SAMPLE_DOCS), "--cases",
                 cases, "--out", str(tmp_path / "out"), "--retries", "0"])
    return code, capsys.readouterr(), next((tmp_path / "out").iterdir())


def test_a_run_prints_a_systems_name_and_warnings_escaped(escaping_run):
    code, captured, _ = escaping_run
    assert code == 0
    assert _clean(captured.out) and _clean(captured.err)
    assert "escaping \\u001b]0;PWNED\\u0007" in captured.out


def test_review_shows_answers_passages_and_quotes_escaped_and_keeps_its_own_highlight(escaping_run, monkeypatch,
                                                                                          capsys):
    _, _, run = escaping_run
    monkeypatch.setattr("sys.stdin", io.StringIO("p\nq\n"))
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    assert main(["review", str(run), "--reviewer", "ann"]) == 0
    out = capsys.readouterr().out
    assert "Answer \\u001b]0;PWNED\\u0007\\u001b[2J" in out and "\\u202e" in out
    assert "\x1b]" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    assert out.count("\x1b[7m") == out.count("\x1b[0m") >= 1  # the highlight is the only escape left
    assert "\x1b[2J" not in out and "\x1b[H" not in out


def test_draft_review_shows_drafts_escaped(drafts_file, monkeypatch, capsys):
    drafts = read_drafts(drafts_file)
    first = next(i for i, d in enumerate(drafts) if d.kind != "error" and d.verification.passed)
    drafts[first] = replace(drafts[first], question=f"What {ESCAPES}?")
    write_drafts(drafts_file, drafts)
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["draft", "review", str(drafts_file), "--reviewer", "ann"]) == 0
    out = capsys.readouterr().out
    assert "What \\u001b]0;PWNED\\u0007" in out and _clean(out)


@needs_tmux
@pytest.mark.parametrize("command", ["review {run} --reviewer ann < {keys}", "export {run} --csv -"])
def test_review_and_export_in_a_real_terminal_neither_retitle_nor_clear_it(escaping_run, tmp_path, command):
    _, _, run = escaping_run
    keys = tmp_path / "keys.txt"
    keys.write_text("p\nq\n")
    screen, title = _in_a_terminal(tmp_path, f"{sys.executable} -m harness.cli " + command.format(run=run, keys=keys))
    assert "\\u001b]0;PWNED\\u0007" in screen and title != "PWNED"
