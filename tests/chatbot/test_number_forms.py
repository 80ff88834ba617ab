"""Issue #43: the text rule folds what is the same text but never turns one number into another.

NFKC alone turned "10⁵" into "105", "②①" into "21" and "1½" into "11⁄2", so a quote or fact naming the other
number matched. Each pair below is checked each way, through every check that compares text: quote validation
(the chatbot's and the harness's), facts, drafting's quote check, chunking and highlighting.
"""

from __future__ import annotations

import json
import sys
import unicodedata

import numpy as np
import pytest

from chatbot.index import Index
from harness.cases import Case, Evidence
from harness.drafting.verify import Limits, PageView
from harness.drafting.verify import check_draft_quote as draft_quote
from harness.metrics.matching import fact_found
from harness.records import Citation, Passage, SystemAnswer
from harness.rows import ScoringRules, build_row
from pdfrag.chunking import Chunk, chunk_pages
from pdfrag.citations import check_quote
from pdfrag.errors import InputError
from pdfrag.pdfs import Page
from pdfrag.text import _NUMBER_FORMS, _SUBSCRIPTS, _SUPERSCRIPTS, TEXT_RULE, find_quote, fold, normalize

# (written in a form of its own, the plain digits NFKC used to make of it)
PAIRS = [("10\u2075", "105"), ("\u2461\u2460", "21"), ("1\u00bd", "11")]


@pytest.mark.parametrize("raw, expected", [
    ("10\u2075 units", "10^5 units"),              # superscript run: "^" and its digits
    ("10\u207b\u00b3 mol", "10^-3 mol"),           # with its sign
    ("10\u20757", "10^5 7"),                       # a digit after it stays another number
    ("H\u2082O", "H_2O"),                          # subscript run: "_"
    ("\u2461\u2460", "(2)(1)"),                    # circled numbers: "(n)"
    ("\u3251", "(21)"),
    ("1\u00bd", "1 1/2"),                          # a vulgar fraction is set off from the digit before it
    ("\u00bd cup", "1/2 cup"),
    ("11\u20442", "11/2"),                         # the fraction slash is a slash
    ("5\u33a1", "5m^2"),                           # squared unit: its power is an exponent
    ("\ufb01nal \u2013 \u00a0EUR\u2009160", "final - EUR 160"),  # what is the same text still folds
    ("\uff11\uff10\uff15", "105"),                 # fullwidth digits are the same digits
])
def test_number_forms_keep_a_form_of_their_own(raw, expected):
    assert normalize(raw) == expected


@pytest.mark.parametrize("written, digits", PAIRS)
@pytest.mark.parametrize("way", ["page has the form", "page has the digits"])
def test_quote_invalid_and_fact_not_found_each_way(written, digits, way):
    page_number, said = (written, digits) if way == "page has the form" else (digits, written)
    page = f"The maximum dose is {page_number} units per day."
    quote = f"The maximum dose is {said} units per day"
    assert not check_quote("a#p1", quote, [("a#p1", page)], min_words=4).valid
    assert find_quote(page, quote)[1] is None
    assert not fact_found(f"It is {said} units.", [page_number])
    view = PageView(pages={"a#p1": fold(page)}, chunks={"a#p1": (fold(page),)}, languages={"a#p1": "en"})
    assert [r.code for r in draft_quote("a#p1", quote, view, Limits())[0]] == ["quote_not_found"]
    # the same number, written the same way, still matches
    assert check_quote("a#p1", f"The maximum dose is {page_number} units", [("a#p1", page)], min_words=4).valid
    assert fact_found(f"It is {page_number} units.", [page_number])


@pytest.mark.parametrize("written, digits", PAIRS)
def test_a_row_scores_the_other_number_as_wrong(written, digits):
    page = f"The maximum dose is {written} units per day."
    case = Case(id="dose", question="Maximum dose?", abstain=False, facts=((written,),),
                evidence=(Evidence("a.pdf#p1"),))
    answer = SystemAnswer(answer=f"{digits} units per day.",
                          retrieved=(Passage(source_id="a.pdf#p1", text=page, rank=1),),
                          citations=(Citation(source_id="a.pdf#p1", quote=f"maximum dose is {digits} units"),))
    row = build_row(case, answer, ScoringRules(ks=(1,)), elapsed_ms=1.0)
    assert row.answer.citations[0].valid is False
    assert row.metrics["facts"] == 0.0


def test_a_fact_is_not_found_inside_an_exponent():
    assert not fact_found("up to 10\u2075 units", ["10"]) and not fact_found("up to 10\u2075 units", ["5"])
    assert fact_found("up to 10^5 units", ["10\u2075"])  # the same number typed with a caret


def test_chunks_and_highlights_keep_the_forms():
    [chunk] = chunk_pages([Page("a.pdf", 1, "Dose: 10\u2075 units, step \u2461, 1\u00bd tablets.")])
    assert chunk.text == "Dose: 10^5 units, step (2), 1 1/2 tablets."
    text, span = find_quote(chunk.text, "1\u00bd tablets")
    assert span is not None and text[span[0]:span[1]] == "1 1/2 tablets"


def _numeric_forms() -> list[str]:
    """Every character of this Python's Unicode that NFKC turns into text with a digit, not being a digit."""
    return [c for c in map(chr, range(0x80, sys.maxunicode + 1))
            if not c.isdecimal() and unicodedata.normalize("NFKC", c) != c
            and any(d.isdecimal() for d in unicodedata.normalize("NFKC", c))]


def test_every_numeric_form_of_this_pythons_unicode_keeps_its_own_form():
    forms = _numeric_forms()
    assert len(forms) > 200  # superscripts, subscripts, circled, parenthesised, fractions, squares
    handled = set(_NUMBER_FORMS) | set(_SUPERSCRIPTS) | set(_SUBSCRIPTS)
    assert [c for c in forms if c not in handled] == []
    for char in forms:  # never joined to a digit beside it, so never part of another number
        text = normalize(f"7{char}7")
        assert text[0] == text[-1] == "7" and not text[1].isdecimal() and not text[-2].isdecimal(), char


def _saved_index(tmp_path, **manifest) -> str:
    chunk = Chunk("a.pdf#p1", "a.pdf", 1, 0, 3, "105")
    index = Index([chunk], np.ones((1, 2), dtype=np.float32) / np.sqrt(2),
                  {"format": 1, "embedding": {"model": "m", "digest": "d"}, **manifest})
    return str(index.save(tmp_path / "index"))


def test_an_index_saved_under_the_old_text_rule_is_not_reused(tmp_path):
    old = _saved_index(tmp_path)  # before the rule had a version: its chunks may hold "105" made of "10⁵"
    with pytest.raises(InputError, match="text rule 1.*rebuild it with `rag-chat index DOCS`"):
        Index.load(old)
    current = _saved_index(tmp_path, text_rule=TEXT_RULE)
    assert Index.load(current).chunks[0].text == "105"
    assert json.loads((tmp_path / "index" / "manifest.json").read_text())["text_rule"] == TEXT_RULE
