"""The bundled sample handbook, its labelled cases, and the pypdf-only PDF writer that makes them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pypdf
import pytest

from tests.conftest import pdfgen

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_docs"
HANDBOOK = SAMPLE_DIR / "handbook.pdf"
CASES = SAMPLE_DIR / "cases.jsonl"
REQUIRED_FIELDS = {"id", "question", "evidence", "facts", "abstain"}
OPTIONAL_FIELDS = {"tags", "notes"}
SOURCE_ID = re.compile(r"^handbook\.pdf#p([1-9][0-9]*)$")


make = pdfgen  # sample_docs/make_sample_docs.py, loaded from its path by conftest


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _page_texts(path: Path) -> list[str]:
    return [_collapse(page.extract_text()) for page in pypdf.PdfReader(path).pages]


def _cases() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _contains_word(text: str, fact: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(fact.lower())}(?!\w)", text.lower()) is not None


# --- the writer -------------------------------------------------------------------------------------------


def test_regenerating_the_handbook_is_byte_identical(tmp_path):
    regenerated = make.write_handbook(tmp_path / "handbook.pdf")
    assert _sha256(regenerated) == _sha256(HANDBOOK), (
        "handbook.pdf is stale or pypdf's output changed: run `python sample_docs/make_sample_docs.py`"
    )


def test_text_round_trips_in_order_with_paragraphs_and_escapes(tmp_path):
    long_paragraph = " ".join(f"word{i}" for i in range(60))
    pages = [f"First (bracketed) back\\slash.\n\n{long_paragraph}", "Second page, Caf\u00e9 costs \u20ac 5."]
    make.write_text_pdf(tmp_path / "t.pdf", pages, title="T")

    reader = pypdf.PdfReader(tmp_path / "t.pdf")
    assert [_collapse(page.extract_text()) for page in reader.pages] == [_collapse(p) for p in pages]
    assert reader.metadata.title == "T"
    # The long paragraph was wrapped onto several lines rather than run off the page.
    assert reader.pages[0].extract_text().count("\n") >= 3


def test_font_is_standard_helvetica_with_winansi_encoding(tmp_path):
    make.write_text_pdf(tmp_path / "t.pdf", ["Hello"])
    page = pypdf.PdfReader(tmp_path / "t.pdf").pages[0]
    (font,) = page["/Resources"]["/Font"].values()
    font = font.get_object()
    assert (font["/BaseFont"], font["/Encoding"]) == ("/Helvetica", "/WinAnsiEncoding")
    assert page.get_contents().get_data().startswith(b"BT\n/F1 10 Tf")


@pytest.mark.parametrize("blank", ["", "  \n\n "])
def test_an_empty_page_has_no_extractable_text(tmp_path, blank):
    make.write_text_pdf(tmp_path / "scan.pdf", ["Before", blank, "After"])
    texts = [page.extract_text() for page in pypdf.PdfReader(tmp_path / "scan.pdf").pages]
    assert texts[1].strip() == ""
    assert "Before" in texts[0] and "After" in texts[2]


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        (["go \u2192 here"], "WinAnsiEncoding"),
        (["\u4e2d"], "WinAnsiEncoding"),
        (["line\n\n" * 60], "only"),
    ],
)
def test_unwritable_text_is_rejected(tmp_path, pages, message):
    with pytest.raises(ValueError, match=message):
        make.write_text_pdf(tmp_path / "bad.pdf", pages)


def test_encrypted_pdf_needs_the_password(tmp_path):
    make.write_encrypted_pdf(tmp_path / "locked.pdf", ["Secret text"], "s3cret")
    reader = pypdf.PdfReader(tmp_path / "locked.pdf")
    assert reader.is_encrypted
    assert reader.decrypt("wrong") == pypdf.PasswordType.NOT_DECRYPTED
    assert reader.decrypt("s3cret") != pypdf.PasswordType.NOT_DECRYPTED
    assert "Secret text" in reader.pages[0].extract_text()


# --- the handbook ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page_number", "sentence"),
    [
        (1, "Full-time employees are entitled to 25 days of annual leave per calendar year."),
        (2, "Hotel costs are reimbursed up to EUR 160 per night, including breakfast."),
        (2, "In London and Paris the hotel limit is EUR 210 per night"),
        (3, "a one-off home-office equipment allowance of EUR 600."),
        (4, "A lost or stolen laptop must be reported to the IT service desk within one hour"),
    ],
)
def test_handbook_key_sentences_are_on_their_pages(page_number, sentence):
    texts = _page_texts(HANDBOOK)
    assert len(texts) == 4
    assert sentence in texts[page_number - 1]


def test_handbook_is_plain_ascii_and_states_no_revenue():
    text = " ".join(_page_texts(HANDBOOK))
    assert text.isascii()
    for word in ("revenue", "turnover", "profit", "CEO", "parking"):
        assert not _contains_word(text, word), word


# --- the cases ---------------------------------------------------------------------------------------------


def test_every_case_line_is_valid_and_ids_are_unique():
    lines = [line for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(lines) >= 14
    ids = []
    for number, line in enumerate(lines, start=1):
        case = json.loads(line)
        assert REQUIRED_FIELDS <= case.keys() <= REQUIRED_FIELDS | OPTIONAL_FIELDS, f"line {number}"
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", case["id"]), f"line {number}"
        assert isinstance(case["question"], str) and case["question"].strip()
        assert isinstance(case["abstain"], bool)
        for item in case["evidence"]:
            assert item.keys() <= {"source_id", "quote"} and SOURCE_ID.match(item["source_id"]), f"line {number}"
        for fact in case["facts"]:
            alternatives = [fact] if isinstance(fact, str) else fact
            assert alternatives and all(isinstance(a, str) and a.strip() for a in alternatives), f"line {number}"
        assert all(isinstance(tag, str) for tag in case.get("tags", []))
        if case["abstain"]:
            assert case["evidence"] == [] and case["facts"] == [], f"line {number}"
        else:
            assert case["evidence"] and case["facts"], f"line {number}"
        ids.append(case["id"])
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", _cases(), ids=lambda case: case["id"])
def test_evidence_quotes_occur_on_their_pages(case):
    texts = _page_texts(HANDBOOK)
    for item in case["evidence"]:
        page_number = int(SOURCE_ID.match(item["source_id"]).group(1))
        assert page_number <= len(texts)
        if "quote" in item:
            assert _collapse(item["quote"]) in texts[page_number - 1]


@pytest.mark.parametrize("case", [c for c in _cases() if not c["abstain"]], ids=lambda case: case["id"])
def test_every_fact_is_stated_on_an_evidence_page(case):
    texts = _page_texts(HANDBOOK)
    evidence_text = " ".join(texts[int(SOURCE_ID.match(e["source_id"]).group(1)) - 1] for e in case["evidence"])
    for fact in case["facts"]:
        alternatives = [fact] if isinstance(fact, str) else fact
        assert any(_contains_word(evidence_text, a) for a in alternatives), fact


def test_the_case_set_covers_what_the_evaluation_needs():
    cases = _cases()
    tags = [set(case.get("tags", [])) for case in cases]
    assert sum(case["abstain"] for case in cases) >= 2
    assert any(len({e["source_id"] for e in case["evidence"]}) >= 2 for case in cases)
    assert any("rephrasing" in t for t in tags) and any("distractor" in t for t in tags)
    assert all(len(t & {"dev", "heldout"}) == 1 for t in tags)
