"""Run-level warnings (issue #20 item 10) and the report header of a plug-in system (item 11).

The systems are tests/support/sysfixtures.py's: the BM25 example with its ids renamed as loaders do (0-based
pages; file names without their folder). They answer by BM25, not by a model."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main
from harness.report.row_warnings import count_warnings, warning_lines
from pdfrag.terminal import printable
from tests.conftest import HANDBOOK, sample_cases
from tests.support.rowkit import make_row


def _run(tmp_path: Path, system: str, capsys) -> tuple[Path, str]:
    out = tmp_path / "results"
    code = main(["run", "--system", system, "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                 "--out", str(out)])
    assert code == 0
    (run,) = out.iterdir()
    return run, capsys.readouterr().out


def test_zero_based_pages_are_counted_after_the_summary_with_the_likely_cause(tmp_path, capsys):
    run, text = _run(tmp_path, "tests.support.sysfixtures:zero_based", capsys)
    after = text.split("answer statuses:", 1)[1]
    assert "row warnings by kind (rows with it / 21 rows):" in after
    assert "a retrieved passage's text is on the page before the one its id names" in after
    assert "likely cause: page numbers look 0-based: add 1 to the page of every source id" in after
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    warnings_at = page.index('<h2 id="warnings">Row warnings</h2>')
    assert warnings_at < page.index('<section id="funnel"') and "page numbers look 0-based: add 1" in page[warnings_at:]


def test_a_plugin_header_shows_its_own_describe_and_no_harness_defaults(tmp_path, capsys):
    run, _ = _run(tmp_path, "tests.support.sysfixtures:zero_based", capsys)
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    header = page[page.index("<ul>"):page.index("</ul>")]
    assert "zero-based pages (test fixture) 2" in header
    assert "--system tests.support.sysfixtures:zero_based" in header
    assert "its settings: {&quot;page_base&quot;: 0, &quot;top_k&quot;: 3}" in header
    assert "chunk size" not in header and "top-k" not in header and "None" not in header and "?" not in header


def test_a_builtin_header_keeps_its_chunk_settings(tmp_path, capsys):
    run, text = _run(tmp_path, "offline", capsys)
    assert "row warnings" not in text
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    assert "chunk size 2000, top-k 4" in page and 'id="warnings"' not in page


def _with(row, *warnings):
    return row.model_copy(update={"warnings": warnings})


def test_counts_by_kind_and_a_cause_only_for_most_rows():
    missing = "retrieved guide.pdf#p2: no such page in the documents (ids are <file>#p<page>, paths relative to " \
              "--docs, pages from 1)"
    rows = [_with(make_row(f"c{i}", {}), missing, missing.replace("p2", "p3")) for i in range(3)]
    rows.append(_with(make_row("c3", {}), "a note of the system's own"))
    counts = count_warnings(rows)
    assert [(c.kind, c.rows, c.occurrences) for c in counts] == [("no_such_page", 3, 6),
                                                                  ("a note of the system's own", 1, 1)]
    assert "LlamaIndex's file_name" in counts[0].cause and counts[1].cause is None
    lines = warning_lines(counts, 4)
    assert lines[1] == "  3/4 rows (6 times): a retrieved passage's id names no page of the documents"
    assert lines[2] == f"    e.g. {missing}" and lines[3].startswith("    likely cause: source ids are")
    assert count_warnings(rows[:1] + [make_row("x", {})] * 2)[0].cause is None  # 1 of 3: not most
    assert warning_lines((), 5) == []


def test_outside_text_is_escaped_on_the_terminal():
    assert printable("retrieved a\x1b[2J.pdf#p1\x07") == "retrieved a\\u001b[2J.pdf#p1\\u0007"
    assert printable("Straße ﬁle") == "Straße ﬁle"
