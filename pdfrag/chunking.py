"""Page-bounded chunking. Source ids: `<doc>#p<page>` for a whole page, `<doc>#p<page>.<n>` for its n-th chunk."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .errors import InputError
from .pdfs import Page
from .text import normalize, sentence_ends


@dataclass(frozen=True)
class ChunkSettings:
    """`size_chars`: most characters a chunk may hold; `overlap_chars`: characters repeated between windows."""

    size_chars: int = 2000
    overlap_chars: int = 200

    def __post_init__(self) -> None:
        if self.size_chars < 50:
            raise InputError(f"chunk size {self.size_chars} is too small; use at least 50 characters")
        if not 0 <= self.overlap_chars < self.size_chars // 2:
            raise InputError(
                f"chunk overlap {self.overlap_chars} must be at least 0 and below half the chunk size "
                f"({self.size_chars})"
            )

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Chunk:
    """A piece of one page. `start`/`end` are character offsets into the page's normalised text."""

    source_id: str
    doc_id: str
    page: int
    start: int
    end: int
    text: str

    @property
    def page_id(self) -> str:
        """The page-level source id, which labels use whatever the chunk settings."""
        return f"{self.doc_id}#p{self.page}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Chunk":
        return cls(**data)


def chunk_pages(pages: list[Page], settings: ChunkSettings = ChunkSettings()) -> list[Chunk]:
    """Chunk every page with text; a page that fits is one chunk whose id is the page id."""
    chunks: list[Chunk] = []
    for page in pages:
        text = normalize(page.text)
        if not text:
            continue
        spans = _windows(text, settings.size_chars, settings.overlap_chars)
        if len(spans) == 1:
            chunks.append(Chunk(page.source_id, page.doc_id, page.page, 0, len(text), text))
            continue
        for n, (start, end) in enumerate(spans, start=1):
            chunks.append(Chunk(f"{page.source_id}.{n}", page.doc_id, page.page, start, end, text[start:end]))
    return chunks


def _windows(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Cut `text` into windows of at most `size` characters, ending at a sentence end, else a word end."""
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        if len(text) - start <= size:
            spans.append((start, len(text)))
            return spans
        end = _cut(text, start, start + size)
        spans.append((start, end))
        start = _next_start(text, start, end, overlap)


def _cut(text: str, start: int, limit: int) -> int:
    """The best end for a window [start, limit): last sentence end in its second half, else last space."""
    window = text[start:limit]
    ends = sentence_ends(text[start:limit + 2])  # look one character past the limit for the next sentence start
    ends = [e for e in ends if e <= len(window)]
    half = len(window) // 2
    if ends and ends[-1] > half:
        return start + ends[-1]
    space = window.rfind(" ", half)
    return start + space if space > 0 else limit


def _next_start(text: str, start: int, end: int, overlap: int) -> int:
    """Step back `overlap` characters from `end`, then forward to the next word start; always progress."""
    if overlap == 0:
        nxt = end
    else:
        nxt = max(end - overlap, start + 1)
        space = text.find(" ", nxt)
        nxt = space + 1 if 0 <= space < end else nxt
    while nxt < len(text) and text[nxt] == " ":
        nxt += 1
    return nxt
