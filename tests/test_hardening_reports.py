"""Issue #19 item 14: report and leaderboard pages keep outside text in its place: bidi isolated, long tokens
wrapped, the same Content-Security-Policy on both pages, Markdown cells that stay text."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from harness.cli import main
from harness.report.html import render_report
from harness.report.markup import CSP_META, esc, md
from harness.runs import load_run
from harness.sweep.leaderboard_files import leaderboard_markdown
from harness.sweep.leaderboard_html import leaderboard_html
from tests.conftest import SAMPLE_DOCS, sample_cases
from tests.sweep.test_leaderboard import build_leaderboard, cell

RLO = "\u202e"
TAG = f"finance{RLO}gnirts-desrever"
LONG = "x" * 3000


def test_esc_isolates_only_text_whose_direction_could_leak():
    assert esc(f"a{RLO}b<") == f"<bdi>a{RLO}b&lt;</bdi>"
    assert esc("שלום") == "<bdi>שלום</bdi>"
    assert esc("plain <b>") == "plain &lt;b&gt;"


def test_a_reversing_tag_and_a_huge_token_in_a_run_are_isolated_and_wrapped(tmp_path):
    cases = tmp_path / "cases.jsonl"
    lines = [json.loads(x) for x in open(sample_cases(tmp_path), encoding="utf-8")]
    for case in lines[:3]:
        case["tags"] = [*case.get("tags", []), TAG]
    lines[0]["question"] = f"{lines[0]['question']} {LONG}"
    cases.write_text("".join(json.dumps(c) + "\n" for c in lines), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", "--offline", "--docs", str(SAMPLE_DOCS), "--cases", str(cases), "--out", str(out)]) in (0, 3)
    page = render_report(load_run(next(out.iterdir())))
    assert page.count(RLO) >= 3
    isolated = re.findall(f"<bdi>[^<]*{RLO}[^<]*</bdi>", page)
    assert sum(x.count(RLO) for x in isolated) == page.count(RLO)  # never loose among the page's own text
    assert "overflow-wrap:anywhere" in page and LONG in page
    assert CSP_META in page


def _board():
    base = cell("chunk-size=600", [0.0] * 10 + [1.0] * 10, latency=200.0)
    odd = cell(f"prompt=[click](http://x.example) <img src=x> **bold** `code` |{RLO}x.txt", [1.0] * 20,
               latency=300.0)
    return build_leaderboard(base, [odd], primary="passed", resamples=200)


def test_the_leaderboard_page_has_the_reports_policy_and_isolates_labels():
    page = leaderboard_html(_board(), None, SimpleNamespace(cells=[]))
    assert CSP_META in page and "overflow-wrap:anywhere" in page
    assert "<img" not in page and "<bdi>prompt=[click]" in page


def test_leaderboard_markdown_cells_stay_text():
    text = leaderboard_markdown(_board())
    assert "[click](" not in text and "**bold**" not in text and "`code`" not in text
    assert re.search(r"(?<!\\)<img", text) is None and r"\<img src=x\>" in text
    assert md("a|b <c> [d](e) *f* _g_ `h` & ~i~\nj") == r"a\|b \<c\> \[d\](e) \*f\* \_g\_ \`h\` \& \~i\~ j"
    row = next(line for line in text.splitlines() if line.startswith("| prompt="))
    header = next(line for line in text.splitlines() if line.startswith("| cell"))
    assert row.count(" | ") == header.count(" | ")  # the label's | did not add a column
