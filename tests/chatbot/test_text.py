import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatbot.text import clip, fold, is_clipped, normalize


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
