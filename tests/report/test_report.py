"""The HTML report: self-contained, one chart per metric family, and every document or model text escaped.
(tests/report/test_browser.py renders the same hostile report in headless Chromium.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.report.html import chart_families, highlight_quote, render_report
from harness.review.store import Claim, Review, apply_to_run
from harness.runs import load_run, read_rows
from harness.settings import RunSettings
from pdfrag.text import find_quote
from tests.conftest import SAMPLE_DOCS, pdfgen

SCRIPT = "<script>document.title='pwned'</script>"
IMG = "<img src=x onerror=alert(1)>"
HOSTILE_PAGE = (f"Security notice. The attacker wrote {SCRIPT} into the wiki page. "
                f"The image tag {IMG} must stay plain text in every report.\n\n"
                "Passwords must be changed every 90 days by every employee.")


def hostile_run(root: Path) -> Path:
    """An offline run over a PDF whose text holds a <script> and an <img onerror>, with cases that make the
    extractive answerer quote both. Shared with the browser test."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    pdfgen.write_text_pdf(docs / "evil.pdf", [HOSTILE_PAGE])
    cases = root / "cases.jsonl"
    cases.write_text("\n".join(json.dumps(c) for c in [
        {"id": "script", "question": "What did the attacker write into the wiki page?", "abstain": False,
         "evidence": [{"source_id": "evil.pdf#p1", "quote": f"The attacker wrote {SCRIPT} into the wiki page."}],
         "facts": [["document.title"]], "tags": ["<b>tag</b>"]},
        {"id": "image", "question": "Which image tag must stay plain text in every report?", "abstain": False,
         "evidence": [{"source_id": "evil.pdf#p1", "quote": IMG}], "facts": ["onerror"]},
    ]) + "\n")
    settings = RunSettings(system="offline", out=str(root / "runs"), label="hostile", docs=str(docs), cases=str(cases))
    return run_evaluation(settings).run_dir


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return hostile_run(tmp_path_factory.mktemp("hostile"))


def test_document_markup_is_inert(hostile):
    rows = read_rows(hostile)
    assert SCRIPT in rows[0].answer.model_answer and IMG in rows[1].answer.model_answer
    page = render_report(load_run(hostile))
    lowered = page.lower()
    assert "<script" not in lowered and "<img" not in lowered and "onerror=alert(1)>" not in lowered
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;b&gt;tag&lt;/b&gt;" in page  # labels are escaped too
    # the cited quote is marked inside its passage, escaped before it was wrapped
    assert "<mark>The attacker wrote &lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt; into" in page


def test_report_is_self_contained(hostile):
    page = render_report(load_run(hostile))
    assert "://" not in page  # no URL at all, so nothing to fetch
    for tag in ("<link", "<iframe", "<object", "<embed", "@import", "url("):
        assert tag not in page.lower()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


@pytest.mark.parametrize("passage, quote, expected", [
    ("a <b>x</b> c", "<b>x</b>", "a <mark>&lt;b&gt;x&lt;/b&gt;</mark> c"),
    ("Costs “EUR 160”  per\nnight & more", 'costs "eur 160" PER night',
     "<mark>Costs &quot;EUR 160&quot; per night</mark> &amp; more"),
    ("nothing here", "missing quote", "nothing here"),
    ("x & y", "", "x &amp; y"),
])
def test_highlight_quote(passage, quote, expected):
    assert highlight_quote(passage, quote) == expected


def test_find_quote_span_indexes_the_normalised_passage():
    text, span = find_quote("Hello   World. Foo", "world. foo")
    assert text == "Hello World. Foo" and text[span[0]:span[1]] == "World. Foo"


def test_chart_families():
    names = ["hit@1", "hit@4", "recall@1", "rr", "facts", "behaviour", "quote_valid", "claims_supported"]
    assert chart_families(names) == [("Hit@k", ["hit@1", "hit@4"]), ("Recall@k", ["recall@1"]),
                                     ("Reciprocal rank", ["rr"]),
                                     ("Answer checks", ["facts", "behaviour", "quote_valid"]),
                                     ("Claim support (human review)", ["claims_supported"])]


@pytest.fixture(scope="module")
def sample_pair(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    cases = out / "cases.jsonl"  # a copy, so that the review below lands here and not in sample_docs
    cases.write_text((SAMPLE_DOCS / "cases.jsonl").read_text())
    common = dict(system="offline", out=str(out), docs=str(SAMPLE_DOCS / "handbook.pdf"), cases=str(cases))
    return (run_evaluation(RunSettings(label="a", chunk_size=1500, **common)).run_dir,
            run_evaluation(RunSettings(label="b", chunk_size=600, **common)).run_dir)


def test_side_by_side_report_with_charts_diff_and_review(sample_pair):
    a, b = sample_pair
    first = read_rows(a)[0]
    review = Review(first.case_id, first.answer.answer_sha256,
                    (Claim("25 days of annual leave", "supported", "handbook.pdf#p1.1", "<i>ok</i>"),), "ann", "t")
    apply_to_run(a, {review.key: review})
    page = render_report(load_run(b), vs=load_run(a))  # --vs is the baseline A
    # hit@k, recall@k, rr, answer checks, claim support, and (since #10 put the tutorial's checks in the one
    # registry) the five checks with passed
    assert page.count("<svg ") == 6
    assert f"A: {a.name}" in page and f"B: {b.name}" in page
    assert "<td>settings.chunk_size</td><td>1500</td><td>600</td>" in page
    assert "human claim review: 1 reviewed, 20 pending" in page
    assert "claims supported 1.000" in page and "&lt;i&gt;ok&lt;/i&gt;" in page
    assert page.count("claim review: pending") == 20 + 21
    assert len(re.findall(r'<tr id="case-[^"]+"><td><b>', page)) == 21  # one anchored table row per case


def test_every_bar_of_the_report_charts_has_its_interval_around_it(sample_pair):
    """Issue #20 item 20: charts show intervals. Each bar with a value has a whisker: the 95 % bootstrap
    interval of its mean over the cases where the metric applies, which holds the bar's value."""
    from harness.stats.paired import mean_interval
    from harness.summary import metric_values
    a, b = sample_pair
    page = render_report(load_run(b), vs=load_run(a))
    bars = re.findall(r'<rect class="bar"[^>]*><title>([^<]*): ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]</title>', page)
    assert len(bars) == page.count('<rect class="bar"') == page.count('<path class="interval"') > 20
    for _, value, low, high in bars:
        assert float(low) <= float(value) <= float(high)
    values = metric_values(read_rows(b), "hit@1")
    low, high = mean_interval(values, resamples=2_000)  # no repeats here: one value per case
    assert f"{b.name} hit@1: {sum(values) / len(values):.3f} [{low:.3f}, {high:.3f}]</title></rect>" in page


def test_a_chart_interval_resamples_cases_not_repeats():
    """Ten repeats of four cases are four cases to the whisker: the same interval as one row per case."""
    from harness.report.html import _chart_interval
    from tests.support.rowkit import make_row
    values = {"a": 1.0, "b": 0.0, "c": 1.0, "d": 0.0}
    once = [make_row(c, {"hit@1": v}) for c, v in values.items()]
    repeated = [make_row(c, {"hit@1": v}, repeat=r) for r in range(10) for c, v in values.items()]
    assert _chart_interval(repeated, "hit@1", False) == _chart_interval(once, "hit@1", False)
    assert _chart_interval([make_row("a", {"hit@1": None})], "hit@1", False) is None


def test_cli_writes_the_report(sample_pair, tmp_path, capsys):
    a, b = sample_pair
    assert main(["report", str(a)]) == 0
    assert (a / "report.html").read_text().startswith("<!DOCTYPE html>")
    out = tmp_path / "cmp.html"
    assert main(["report", str(a), "--vs", str(b), "--out", str(out)]) == 0
    assert f"report written to {out}" in capsys.readouterr().out
    assert b.name in out.read_text()


def test_long_lists_show_the_first_n_with_a_count_and_the_export_line(tmp_path):
    """Issue 31: past `limit` items a list shows its first N, says "first N of M" and gives the command that
    writes every row; a contents link whose case is not shown is text, never a link to nowhere."""
    assert main(["score", "--cases", str(SAMPLE_DOCS / "workshop" / "cases.csv"), "--out", str(tmp_path)]) == 0
    [run_dir] = [p for p in tmp_path.iterdir() if p.is_dir()]
    run = load_run(run_dir)
    whole, short = render_report(run), render_report(run, limit=3)
    export = f"rag-eval export {run_dir} --csv rows.csv"
    assert " of 5" not in whole and export not in whole  # ten cases: nothing to cut
    assert len(re.findall(r'<tr id="case-[^"]+"><td><b>', whole)) == 10
    assert '<h2 id="failing">Failing cases (first 3 of 5)</h2>' in short
    assert '<h2 id="passing">Passing cases (first 3 of 5)</h2>' in short
    assert f"first 3 of 5 failing cases; every case: <code>{export}</code>" in short
    assert len(re.findall(r'<tr id="case-[^"]+"><td><b>', short)) == 6
    anchors = set(re.findall(r'<tr id="([^"]+)">', short))
    assert set(re.findall(r'href="#(case-[^"]+)"', short)) <= anchors  # every link lands on a shown case
    assert re.search(r"first 3 of \d+ cases of this group; every case", short)  # a contents group cut short
    assert '<span class="bad">W08</span>' in short  # lost at the decision, beyond the first three failing: no link
