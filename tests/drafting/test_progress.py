"""Draft progress and errors (issue #20 item 19): the progress bar's cache count is true (none on a first run, the
cached pages on a rerun), and why a page could not be drafted is shown in the command's output and in `rag-eval
draft report`. The test server follows tests/support/draft_rules.py, its first chat reply broken on purpose."""

from __future__ import annotations

from harness.cli import main
from tests.conftest import HANDBOOK
from tests.support import draft_rules as rules


def _pages_line(err: str) -> str:
    """The last progress line of the pages stage (stderr is not a terminal: a line at the start, then at the end)."""
    return [line for line in err.splitlines() if line.startswith("pages ")][-1]


def test_cache_counts_are_true_and_error_reasons_are_shown(server, tmp_path, capsys):
    calls = {"n": 0}

    def first_reply_broken(body):
        calls["n"] += 1
        return "this is not JSON" if calls["n"] == 1 else rules.draft_rule(body)

    server.chat_rule = first_reply_broken
    out = tmp_path / "drafts.jsonl"
    command = ["draft", "--docs", str(HANDBOOK), "--out", str(out), "--host", server.url, "--no-parametric"]
    assert main(command) == 0
    first = capsys.readouterr()
    assert _pages_line(first.err).startswith("pages 4/4 ") and "from cache" not in _pages_line(first.err)
    assert "draft errors (page: why; run the same command again to retry): 1" in first.out
    (error_line,) = [line for line in first.out.splitlines() if line.startswith("  handbook.pdf#p")]
    assert error_line.endswith(": malformed output: reply is not JSON (Expecting value at character 0)")

    assert main(["draft", "report", str(out)]) == 0
    assert error_line in capsys.readouterr().out

    assert main(command) == 0  # the failed page is asked again, the three others come from the cache
    again = capsys.readouterr()
    assert "3 from cache" in _pages_line(again.err)
    assert "draft errors (page: why; run the same command again to retry): 0" in again.out
