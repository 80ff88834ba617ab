"""Issue #19 item 18: files that went through a spreadsheet or a Windows editor are read, or refused with one
clear line naming the file and line: cp1252 and UTF-16, `;`/tab separators, a huge cell, a BOM on a JSONL file."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.drafting.records import read_drafts
from harness.review.book import ReviewBook
from harness.review.csv_io import export_csv, import_csv
from harness.saved.layout import load_saved
from pdfrag.errors import InputError
from tests.support.rowkit import make_row

WORKSHOP = Path(__file__).resolve().parent.parent / "sample_docs" / "workshop"


@pytest.fixture
def sheet_text() -> str:
    """A review export with non-ASCII text and every claim given a verdict (as a reviewer saves it)."""
    row = make_row("c1", {"facts": 1.0, "claims_supported": None}, answer="Hotels cost € 160. Straße is paid.",
                   retrieved=["doc.pdf#p1"])
    return export_csv([row], ReviewBook.of([]), reviewer="ann").replace(",,,,\n", ",unsupported,,Müller,\n")


def _import(path: Path):
    return import_csv(path, reviewer="ann", reviewed_at="t")


def _one_line_error(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        _import(path)
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    return message


def test_utf16_with_a_byte_order_mark_is_read_like_utf8(tmp_path, sheet_text):
    utf8, utf16 = tmp_path / "a.csv", tmp_path / "b.csv"
    utf8.write_text(sheet_text, encoding="utf-8")
    utf16.write_bytes(sheet_text.encode("utf-16"))  # Excel's "Unicode text": BOM + UTF-16 LE
    assert _import(utf16) == _import(utf8) and _import(utf8).reviews


def test_windows_1252_is_one_line_saying_how_to_save(tmp_path, sheet_text):
    path = tmp_path / "r.csv"
    path.write_bytes(sheet_text.encode("cp1252"))
    message = _one_line_error(path)
    assert message.startswith(f"{path}:2: not UTF-8 text") and "Windows-1252" in message and "CSV UTF-8" in message


@pytest.mark.parametrize("sep, name", [(";", "`;`"), ("\t", "tab")])
def test_semicolon_or_tab_separated_is_one_line(tmp_path, sheet_text, sep, name):
    rows = list(csv.reader(io.StringIO(sheet_text)))
    out = io.StringIO()
    csv.writer(out, delimiter=sep, lineterminator="\n").writerows(rows)
    path = tmp_path / "r.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    assert f"{path}:1: looks like {name} separated: save as comma-separated" in _one_line_error(path)


def test_a_ten_megabyte_cell_is_one_line_naming_it(tmp_path, sheet_text):
    path = tmp_path / "r.csv"
    path.write_text(sheet_text.replace("Müller", "x" * 10_000_000), encoding="utf-8")
    assert "r.csv:2: unreadable CSV (field larger than field limit" in _one_line_error(path)


def test_review_import_from_the_command_line_says_it_in_one_line(tmp_path, sheet_text, capsys):
    path = tmp_path / "r.csv"
    path.write_bytes(sheet_text.encode("cp1252"))
    run = tmp_path / "run"
    assert main(["run", "--offline", "--docs", str(Path(WORKSHOP).parent / "handbook.pdf"), "--cases",
                 str(Path(WORKSHOP).parent / "cases.jsonl"), "--out", str(run)]) in (0, 3)
    capsys.readouterr()
    assert main(["review", str(next(run.iterdir())), "--import", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "not UTF-8 text" in err and len(err.splitlines()) == 1


def test_saved_output_csvs_say_the_same(tmp_path):
    folder = tmp_path / "workshop"
    shutil.copytree(WORKSHOP, folder)
    cases = folder / "cases.csv"
    text = cases.read_text(encoding="utf-8")
    cases.write_bytes(text.replace("W01", "Wé1", 1).encode("cp1252"))
    with pytest.raises(InputError, match=r"cases\.csv:\d+: \(file\): not UTF-8 text \(it looks like Windows-1252"):
        load_saved(cases)
    cases.write_text(text.replace(",", ";"), encoding="utf-8")
    with pytest.raises(InputError, match=r"cases\.csv:1: \(file\): looks like `;` separated"):
        load_saved(cases)
    cases.write_bytes(text.encode("utf-16"))
    assert len(load_saved(cases).cases) == 10


def test_a_drafts_or_cases_file_with_a_utf8_bom_is_read(drafts_file, tmp_path):
    drafts = read_drafts(drafts_file)
    drafts_file.write_bytes(b"\xef\xbb\xbf" + drafts_file.read_bytes())
    assert read_drafts(drafts_file) == drafts
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes(b"\xef\xbb\xbf" + (WORKSHOP.parent / "cases.jsonl").read_bytes())
    assert main(["check", "--docs", str(WORKSHOP.parent), "--cases", str(cases)]) == 0
