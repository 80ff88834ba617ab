"""Which pages to draft from: a deterministic, seeded round robin across documents.

Documents are put in an order drawn from the seed, and so are each document's pages; pages are then taken one
per document in turn, so `--max-pages 10` over five documents takes two pages from each rather than ten from the
first. Pages with fewer than `min_words` words (covers) and pages without a text layer (scans: OCR them first) are
skipped and listed with the reason.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from pdfrag.pdfs import Document, Page
from pdfrag.text import normalize

from ..errors import InputError

NO_TEXT_LAYER = ("no text layer (a scanned or image-only page?): OCR it first, e.g. `ocrmypdf in.pdf out.pdf`, "
                 "and draft from the copy")


@dataclass(frozen=True)
class PageSelection:
    """The pages to draft from, in drafting order, and the pages left out with why."""

    pages: tuple[Page, ...]
    skipped: tuple[tuple[str, str], ...]  # (page id, reason)
    documents: tuple[str, ...]  # every document id, sorted

    def page_ids(self) -> list[str]:
        return [p.source_id for p in self.pages]


def word_count(text: str) -> int:
    """Words of a page after normalize(): whitespace-separated tokens with at least one letter or digit."""
    return sum(1 for w in normalize(text).split() if any(ch.isalnum() for ch in w))


def select_pages(documents: Sequence[Document], *, seed: int, min_words: int = 20, max_pages: int | None = None,
                 page_ids: Sequence[str] | None = None) -> PageSelection:
    """Seeded round robin over documents (see the module docstring). `page_ids` restricts the choice to those
    pages (unknown ids raise InputError listing them); `max_pages` caps how many are taken."""
    if min_words < 0 or (max_pages is not None and max_pages < 1):
        raise InputError(f"--min-page-words cannot be negative and --max-pages must be at least 1, got "
                         f"{min_words} and {max_pages}")
    known = {p.source_id for d in documents for p in d.pages}
    wanted = set(page_ids) if page_ids else None
    if wanted is not None and (unknown := sorted(wanted - known)):
        raise InputError(f"--pages: no such page(s) {', '.join(unknown)}; `rag-chat pages DOCS` lists every id")
    rng = random.Random(seed)
    skipped: list[tuple[str, str]] = []
    queues: list[list[Page]] = []
    for doc in sorted(documents, key=lambda d: d.doc_id):
        eligible = []
        for page in doc.pages:
            if wanted is not None and page.source_id not in wanted:
                continue
            words = word_count(page.text)
            if page.page in doc.empty_pages:
                skipped.append((page.source_id, NO_TEXT_LAYER))
            elif words < min_words:
                skipped.append((page.source_id, f"{words} words, fewer than --min-page-words {min_words}"))
            else:
                eligible.append(page)
        rng.shuffle(eligible)
        queues.append(eligible)
    rng.shuffle(queues)
    order = _round_robin(queues)
    if max_pages is not None:
        order = order[:max_pages]
    return PageSelection(tuple(order), tuple(skipped), tuple(sorted(d.doc_id for d in documents)))


def nothing_to_draft(selection: PageSelection, docs: str, min_words: int) -> str:
    """Why no page was selected, and what to do: OCR when the pages have no text layer (fewer words asked for
    would not help), else a lower --min-page-words."""
    no_text = sum(why == NO_TEXT_LAYER for _, why in selection.skipped)
    ocr = "OCR them first, e.g. `ocrmypdf in.pdf out.pdf`, and draft from the copies"
    if no_text and no_text == len(selection.skipped):
        return (f"{docs}: none of its {no_text} page(s) has a text layer to draft from (scanned or image-only "
                f"PDFs?); {ocr}")
    return (f"{docs}: no page has at least {min_words} words; lower --min-page-words"
            + (f" ({no_text} page(s) have no text layer at all: {ocr})" if no_text else ""))


def _round_robin(queues: list[list[Page]]) -> list[Page]:
    out: list[Page] = []
    depth = max((len(q) for q in queues), default=0)
    for i in range(depth):
        out.extend(q[i] for q in queues if i < len(q))
    return out
