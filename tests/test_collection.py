"""The bundled fictional collection (sample_docs/collection/): its PDFs, its labelled cases, and that retrieval
settings make a measurable difference on it."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pypdf
import pytest

from harness.cases import load_checked_cases
from harness.cli import main as rag_eval
from harness.evaluate import run_evaluation
from harness.settings import RunSettings
from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.pdfs import read_documents, read_pdf
from pdfrag.text import fold, normalize
from tests.conftest import SAMPLE_DOCS, load_sample_script

COLLECTION = SAMPLE_DOCS / "collection"
CASES = COLLECTION / "cases.jsonl"
HANDBOOK_CASES = SAMPLE_DOCS / "cases.jsonl"
REQUIRED_TAGS = {"superseded-trap", "table", "two-column", "boilerplate", "long-page", "scanned", "non-english",
                 "spelling", "near-duplicate", "paraphrase", "multi-page", "unanswerable", "near-miss"}
SCANNED = ("collection/facilities-notices.pdf", (2, 4))
CURRENT, SUPERSEDED = "collection/procurement-policy-2025.pdf", "collection/procurement-policy-2023.pdf"


def _cases(path: Path = CASES) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _alternatives(fact: str | list[str]) -> list[str]:
    return [fact] if isinstance(fact, str) else fact


def _contains_word(text: str, phrase: str) -> bool:
    """The evaluation's fact rule: case-insensitive, on word boundaries, after normalize()."""
    return re.search(rf"(?<!\w){re.escape(fold(phrase))}(?!\w)", fold(text)) is not None


@pytest.fixture(scope="module")
def documents():
    return read_documents(SAMPLE_DOCS)


@pytest.fixture(scope="module")
def page_text(documents) -> dict[str, str]:
    return {p.source_id: normalize(p.text) for d in documents for p in d.pages}


@pytest.fixture
def combined_cases(tmp_path) -> Path:
    """The default evaluation's case file: the handbook's cases followed by the collection's."""
    path = tmp_path / "cases.jsonl"
    path.write_text(HANDBOOK_CASES.read_text(encoding="utf-8") + CASES.read_text(encoding="utf-8"), encoding="utf-8")
    return path


# --- size and shape ------------------------------------------------------------------------------------------


def test_collection_is_big_enough(documents):
    pdfs = sorted(COLLECTION.glob("*.pdf"))
    assert len(pdfs) >= 6
    assert sum(len(d.pages) for d in documents) >= 50
    cases = _cases()
    assert len(cases) >= 100
    unanswerable = [c for c in cases if c["abstain"] and "unanswerable" in c["tags"] and "scanned" not in c["tags"]]
    assert len(unanswerable) >= 20
    assert any("near-miss" in c["tags"] for c in unanswerable)
    assert sum(len(c["evidence"]) >= 2 for c in cases) >= 5


def test_every_required_tag_is_present_with_dev_and_heldout_cases():
    cases = _cases()
    tags = Counter(t for c in cases for t in c["tags"])
    assert REQUIRED_TAGS <= tags.keys(), REQUIRED_TAGS - tags.keys()
    for tag in REQUIRED_TAGS:
        splits = {s for c in cases if tag in c["tags"] for s in c["tags"] if s in ("dev", "heldout")}
        assert splits == {"dev", "heldout"}, tag
    assert abs(tags["dev"] - tags["heldout"]) <= len(cases) // 10


def test_each_case_is_dev_xor_heldout_and_ids_are_unique_across_both_files():
    cases = _cases()
    assert all(len({"dev", "heldout"} & set(c["tags"])) == 1 for c in cases), "exactly one of dev / heldout"
    ids = [c["id"] for c in _cases(HANDBOOK_CASES)] + [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", c["id"]) for c in cases)


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_case_labels_are_well_formed(case, page_text):
    if case["abstain"]:
        assert case["evidence"] == [] and case["facts"] == []
        return
    assert case["evidence"] and case["facts"]
    for item in case["evidence"]:
        assert item["source_id"].startswith("collection/"), "the collection's cases are about the collection"
        assert 0 < len(item["quote"]) <= 150
        assert fold(item["quote"]) in fold(page_text[item["source_id"]])
    quotes = " ".join(item["quote"] for item in case["evidence"])
    for fact in case["facts"]:
        assert any(_contains_word(quotes, a) for a in _alternatives(fact)), f"fact {fact!r} is not in a quote"


# --- the label check, at the default and at small chunk settings ----------------------------------------------


def test_rag_eval_check_passes_on_handbook_and_collection(combined_cases, capsys):
    assert rag_eval(["check", "--docs", str(SAMPLE_DOCS), "--cases", str(combined_cases)]) == 0
    total = len(_cases(HANDBOOK_CASES)) + len(_cases())
    assert f"{total} cases OK" in capsys.readouterr().out


@pytest.mark.parametrize("size, overlap", [(2000, 200), (600, 100)])
def test_every_quote_fits_in_one_chunk(documents, combined_cases, size, overlap):
    # `rag-eval check` takes no chunk flags; the run does, so check the labels the way a run would.
    chunks = chunk_pages([p for d in documents for p in d.pages], ChunkSettings(size, overlap))
    assert len(load_checked_cases(combined_cases, documents, chunks)) == len(_cases(HANDBOOK_CASES)) + len(_cases())


# --- what each document exercises ------------------------------------------------------------------------------


def test_scanned_pages_have_no_text_layer_and_are_reported(documents):
    doc_id, pages = SCANNED
    reader = pypdf.PdfReader(SAMPLE_DOCS / doc_id)
    for number in pages:
        page = reader.pages[number - 1]
        assert page.extract_text().strip() == ""
        xobjects = page["/Resources"]["/XObject"].values()
        assert [x.get_object()["/Subtype"] for x in xobjects] == ["/Image"], "the page is one picture"
    assert read_pdf(SAMPLE_DOCS / doc_id).empty_pages == pages
    assert {d.doc_id: d.empty_pages for d in documents if d.empty_pages} == {doc_id: pages}
    scanned_cases = [c for c in _cases() if "scanned" in c["tags"]]
    assert scanned_cases and all(c["abstain"] and c["evidence"] == [] for c in scanned_cases)


def test_long_pages_are_split_by_the_default_chunking(documents, page_text):
    chunks = chunk_pages([p for d in documents for p in d.pages], ChunkSettings())
    long_cases = [c for c in _cases() if "long-page" in c["tags"]]
    assert len(long_cases) >= 4
    for case in long_cases:
        for item in case["evidence"]:
            assert len(page_text[item["source_id"]]) > 2000, item["source_id"]
            assert sum(c.page_id == item["source_id"] for c in chunks) >= 2
    # at least one long-page answer lies beyond the first chunk
    first = {c.page_id: c.text for c in chunks if c.source_id.endswith(".1")}
    assert any(fold(e["quote"]) not in fold(first[e["source_id"]]) for c in long_cases for e in c["evidence"])


def test_quality_manual_repeats_its_header_and_footer_on_every_page(documents):
    (manual,) = [d for d in documents if d.doc_id == "collection/quality-manual.pdf"]
    n = len(manual.pages)
    for page in manual.pages:
        text = normalize(page.text)
        assert text.startswith("Northwind Analytics | Quality Management Manual QM-01 | Revision 7")
        assert text.endswith(f"Page {page.page} of {n}")


def test_newsletter_pages_have_two_text_columns():
    for page in pypdf.PdfReader(COLLECTION / "newsletter-2025-03.pdf").pages:
        starts: set[int] = set()

        def visit(text, cm, tm, font, size, starts=starts):
            if text.strip():
                starts.add(round(tm[4]))

        page.extract_text(visitor_text=visit)
        left, right = min(starts), max(starts)
        assert right - left > page.mediabox.width / 3, "text starts in two columns"


def test_german_page_and_german_questions():
    text = " ".join(normalize(p.text) for p in read_pdf(COLLECTION / "standort-hamburg-de.pdf").pages)
    assert re.search("[äöüß]", text) and "Zugangskarte" in text
    german = [c for c in _cases() if "non-english" in c["tags"]]
    assert all(e["source_id"].startswith("collection/standort-hamburg-de.pdf") for c in german for e in c["evidence"])
    assert any(re.search(r"\b(Wann|Wem|Wo|Wie)\b", c["question"]) for c in german), "one question asked in German"


def test_superseded_trap_quotes_are_not_in_the_superseded_version(page_text):
    old = fold(" ".join(t for sid, t in page_text.items() if sid.startswith(SUPERSEDED)))
    current = [c for c in _cases() if "superseded-trap" in c["tags"]
               and {e["source_id"].split("#")[0] for e in c["evidence"]} == {CURRENT}]
    assert len(current) >= 10
    for case in current:
        assert all(fold(e["quote"]) not in old for e in case["evidence"]), case["id"]


def test_near_duplicate_closing_paragraph_appears_in_several_documents(page_text):
    shared = "Exceptions must be requested in writing and approved by"
    docs = {sid.split("#")[0] for sid, text in page_text.items() if shared in text}
    assert len(docs) >= 4


# --- retrieval matters -----------------------------------------------------------------------------------------


def test_offline_baseline_is_neither_perfect_nor_flat(tmp_path, combined_cases):
    result = run_evaluation(RunSettings(system="offline", docs=str(SAMPLE_DOCS), cases=str(combined_cases),
                                        out=str(tmp_path / "runs"), label="collection"))
    metrics = {name: m.mean for name, m in result.summary.metrics.items()}
    assert metrics["hit@1"] < metrics["hit@4"] < 1.0
    assert metrics["facts"] < 1.0 and metrics["behaviour"] < 1.0
    reasons = [r for line in (result.run_dir / "rows.jsonl").read_text().splitlines()
               for r in json.loads(line)["failure_reasons"]]
    for kind in ("not retrieved in the top", "first retrieved at rank", "not in answer",
                 "answered an unanswerable question", "gave no answer to an answerable question"):
        assert any(kind in r for r in reasons), kind


# --- the generator ---------------------------------------------------------------------------------------------


def _generator():
    pytest.importorskip("fpdf", reason="fpdf2 is only in the optional `gen` extra (pip install -e '.[gen]')")
    return load_sample_script("make_collection")


def test_generator_is_reproducible_and_matches_the_committed_pdfs(tmp_path):
    gen = _generator()
    first, second = gen.write_collection(tmp_path / "a"), gen.write_collection(tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    assert sorted(p.name for p in first) == sorted(p.name for p in COLLECTION.glob("*.pdf"))
    stale = [p.name for p in first if p.read_bytes() != (COLLECTION / p.name).read_bytes()]
    assert not stale, (f"{stale} differ from the committed PDFs (edited text, or another fpdf2/Pillow version): "
                       "run `python sample_docs/make_collection.py` and commit the result")
    for doc in gen.DOCUMENTS:
        assert len(pypdf.PdfReader(COLLECTION / doc.file).pages) == len(doc.pages), doc.file


def test_generator_refuses_a_page_that_overflows(tmp_path):
    gen = _generator()
    doc = gen.Doc("too-long.pdf", "Too long", [[("p", "A sentence that fills the page. " * 400)]])
    with pytest.raises(ValueError, match="too-long.pdf: page 1 overflows"):
        gen.write_doc(doc, tmp_path / "too-long.pdf")
