import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.errors import InputError
from pdfrag.pdfs import Page
from pdfrag.text import normalize

LONG = " ".join(f"Sentence {i} explains rule {i} of the policy in detail." for i in range(60))


def test_page_that_fits_is_one_chunk_with_the_page_id():
    [chunk] = chunk_pages([Page("h.pdf", 2, "Hotel costs are\nreimbursed.")])
    assert (chunk.source_id, chunk.page_id, chunk.start, chunk.end) == ("h.pdf#p2", "h.pdf#p2", 0, 27)
    assert chunk.text == "Hotel costs are reimbursed."


def test_long_page_is_windowed_at_sentence_ends_with_numbered_ids():
    chunks = chunk_pages([Page("h.pdf", 3, LONG)], ChunkSettings(400, 80))
    text = normalize(LONG)
    assert [c.source_id for c in chunks] == [f"h.pdf#p3.{n}" for n in range(1, len(chunks) + 1)]
    assert all(c.page_id == "h.pdf#p3" for c in chunks)
    for c in chunks:
        assert text[c.start:c.end] == c.text and len(c.text) <= 400
    assert all(c.text.endswith(".") for c in chunks)          # cut at sentence ends
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    assert all(b.start < a.end for a, b in zip(chunks, chunks[1:]))  # overlap


def test_empty_page_gives_no_chunk():
    assert chunk_pages([Page("h.pdf", 1, "  \n ")]) == []


@pytest.mark.parametrize("size, overlap", [(10, 0), (400, 200), (400, -1)])
def test_bad_settings_are_refused(size, overlap):
    with pytest.raises(InputError):
        ChunkSettings(size, overlap)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abc .!?\n", min_size=0, max_size=12), min_size=0, max_size=300),
       st.integers(50, 300), st.integers(0, 24))
def test_windows_cover_the_page_within_size(parts, size, overlap):
    text = " ".join(parts)
    chunks = chunk_pages([Page("d.pdf", 1, text)], ChunkSettings(size, overlap))
    norm = normalize(text)
    assert "".join(c.text for c in chunks).replace(" ", "") or not norm.replace(" ", "")
    covered = set()
    for c in chunks:
        assert norm[c.start:c.end] == c.text and 0 < len(c.text) <= size
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(norm) if ch != " ")
