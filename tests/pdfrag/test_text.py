import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdfrag.text import _FORMAT, _LINE_END_HYPHEN, _QUOTES, clip, fold, is_clipped, keep_numbers, normalize


@pytest.mark.parametrize("raw, expected", [
    ("the \ufb01rst o\ufb03ce", "the first office"),                 # ligatures fi, ffi (NFKC)
    ("reim-\nbursement", "reimbursement"),                            # line-end hyphen rejoined
    ("reim-  \n  bursement", "reimbursement"),
    ("home-office", "home-office"),                                  # an ordinary hyphen stays
    ("co\u00adoperate", "cooperate"),                                 # soft hyphen dropped
    ("\u201cquoted\u201d and \u2018single\u2019", '"quoted" and \'single\''),
    ("9\u201317 \u2014 done", "9-17 - done"),                         # en and em dash
    ("  many \t spaces\n\nand lines  ", "many spaces and lines"),
    ("EUR\u00a0160", "EUR 160"),                                      # no-break space (NFKC)
])
def test_normalize_examples(raw, expected):
    assert normalize(raw) == expected


@given(st.text())
def test_normalize_is_idempotent_and_folded(text):
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip()
    assert "  " not in once and "\n" not in once and "\u00ad" not in once


def _every_step(text: str) -> str:
    """normalize() as its definition reads, every step on every text (the function skips steps that cannot
    change a text: plain ASCII needs no NFKC, a text without a line end no hyphen rejoin)."""
    text = unicodedata.normalize("NFKC", keep_numbers(_FORMAT.sub("", text)))
    text = _LINE_END_HYPHEN.sub(r"\1\2", text)
    return re.sub(r"\s+", " ", text.translate(_QUOTES)).strip()


_TRICKY = st.text(alphabet=st.sampled_from(list("ab -\n\r\t`'x1") + [
    "\u00a0", "\u2028", "\x1c", "\x85", "\u3000", "\ufb01", "\u00ad", "\u200b", "\u2019", "\u2013", "\x0b",
    "\u2009", "\u00e9", "\ufeff", "\u2460", "\U000e0041", "\u2075", "\u2082", "\u00bd", "\u2044", "\u3251"]))


@given(st.one_of(st.text(), _TRICKY))
def test_normalize_skips_only_steps_that_change_nothing(text):
    assert normalize(text) == _every_step(text)


def test_fold_remembers_recent_texts():
    """Every case folds its retrieved passages in the chatbot's and the harness's quote checks: a run folds the
    same chunks again and again, so fold() keeps recent results (bench/bench_openai.py, CPU per case)."""
    passage = "The ﬁnal HOTEL limit is EUR 120 per night — see “Travel”."
    first = fold(passage)
    hits = fold.cache_info().hits
    assert fold(passage) == first == normalize(passage).casefold()
    assert fold.cache_info().hits == hits + 1


@given(st.text(max_size=300), st.integers(min_value=60, max_value=200))
def test_clip_keeps_short_text_and_cuts_long_text_once_with_a_marker(text, limit):
    cut = clip(text, limit)
    if len(text) <= limit:
        assert cut == text
    else:
        assert len(cut) == limit and is_clipped(cut) and cut.endswith(f"[cut: {len(text):,} characters in all]")
    assert clip(cut, limit) == cut  # never cut twice
