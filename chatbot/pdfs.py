"""The only module that opens PDF files: a file or a folder of PDFs -> documents of page texts."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from .errors import PdfError


@dataclass(frozen=True)
class Page:
    """One page's extracted text. `page` counts from 1."""

    doc_id: str
    page: int
    text: str

    @property
    def source_id(self) -> str:
        return f"{self.doc_id}#p{self.page}"


@dataclass(frozen=True)
class Document:
    """A PDF: its id (path relative to the docs root, POSIX separators), SHA-256 and pages."""

    doc_id: str
    path: str
    sha256: str
    pages: tuple[Page, ...]
    empty_pages: tuple[int, ...] = field(default=())  # pages with no extractable text (probably scanned)


def find_pdfs(root: str | Path) -> tuple[Path, list[Path]]:
    """Return (docs root, PDF paths): the file itself, or every *.pdf under a folder, recursive and sorted."""
    root = Path(root)
    if root.is_file():
        return root.parent, [root]
    if not root.is_dir():
        raise PdfError(f"{root}: no such file or folder; pass a PDF or a folder of PDFs")
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() == ".pdf")
    if not paths:
        raise PdfError(f"{root}: no .pdf files in this folder")
    return root, paths


def read_documents(root: str | Path) -> list[Document]:
    """Read every PDF under `root` (a file or a folder). Raises PdfError naming the first bad file."""
    base, paths = find_pdfs(root)
    return [read_pdf(path, doc_id=path.relative_to(base).as_posix()) for path in paths]


def read_pdf(path: str | Path, *, doc_id: str | None = None) -> Document:
    """Extract the text of every page of one PDF."""
    path = Path(path)
    data = _read_bytes(path)
    reader = _open(path, data)
    pages, empty = [], []
    for number, page in enumerate(reader.pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # pypdf raises many types on damaged content streams
            raise PdfError(f"{path}: page {number} could not be read ({exc}); the file may be corrupt") from exc
        if not text.strip():
            empty.append(number)
        pages.append(Page(doc_id or path.name, number, text))
    if not pages:
        raise PdfError(f"{path}: the PDF has no pages")
    return Document(doc_id or path.name, str(path), hashlib.sha256(data).hexdigest(), tuple(pages), tuple(empty))


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PdfError(f"{path}: cannot read the file ({exc.strerror})") from exc
    if not data:
        raise PdfError(f"{path}: the file is empty (0 bytes); replace it with the real PDF or remove it")
    if not data.lstrip()[:5] == b"%PDF-":
        raise PdfError(f"{path}: not a PDF (the file does not start with %PDF-); remove it or convert it to PDF")
    return data


def _open(path: Path, data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
    except (PdfReadError, ValueError, OSError, KeyError, TypeError) as exc:
        raise PdfError(f"{path}: the PDF is corrupt and cannot be parsed ({exc})") from exc
    if reader.is_encrypted:
        try:
            # Many PDFs are encrypted only against editing, with an empty user password.
            unlocked = reader.decrypt("")
        except (NotImplementedError, DependencyError) as exc:
            raise PdfError(f"{path}: encrypted with an algorithm that needs an extra package ({exc})") from exc
        if not unlocked:
            raise PdfError(f"{path}: the PDF is encrypted with a password; save an unencrypted copy and use that")
    try:
        len(reader.pages)
    except (PdfReadError, FileNotDecryptedError, ValueError, KeyError, TypeError) as exc:
        raise PdfError(f"{path}: the PDF is corrupt and its pages cannot be read ({exc})") from exc
    return reader

