"""The only module that opens PDF files: a file or a folder of PDFs -> documents of page texts."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import PdfError

if TYPE_CHECKING:  # pypdf is imported where a page is read: a command that reads no PDF does not pay for it
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    from .page_cache import PageCache


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


@dataclass(frozen=True)
class Folder:
    """What reading a file or folder found: the documents that could be read, and (path, problem) for each that
    could not, dangling symbolic links included."""

    root: Path
    documents: tuple[Document, ...]
    problems: tuple[tuple[str, str], ...] = ()

    def error(self) -> PdfError:
        """One error listing every bad file, so a user fixes them all in one pass."""
        total = len(self.documents) + len(self.problems)
        lines = "".join(f"\n  {path}: {problem}" for path, problem in self.problems)
        return PdfError(f"{len(self.problems)} of {total} PDF files under {self.root} cannot be read; fix or remove "
                        f"each, then run again:{lines}", problems=self.problems)


def find_pdfs(root: str | Path) -> tuple[Path, list[Path]]:
    """Return (docs root, PDF paths): the file itself, or every *.pdf under a folder, recursive and sorted.
    Symbolic links named *.pdf whose target is missing are included, so reading them reports them."""
    root = Path(root)
    if root.is_file():
        return root.parent, [root]
    if not root.is_dir():
        raise PdfError(f"{root}: no such file or folder; pass a PDF or a folder of PDFs")
    paths = sorted(p for p in root.rglob("*")
                   if p.suffix.lower() == ".pdf" and (p.is_file() or (p.is_symlink() and not p.exists())))
    if not paths:
        raise PdfError(f"{root}: no .pdf files in this folder")
    return root, paths


def read_folder(root: str | Path, progress: Callable[[int, int], None] | None = None, *,
                cache: PageCache | None = None) -> Folder:
    """Read every PDF under `root` (a file or a folder), keeping going past bad files; `progress(done, total)`
    after each file. With `cache`, page text comes from it for files it holds (no pypdf) and goes into it."""
    base, paths = find_pdfs(root)
    documents, problems = [], []
    for n, path in enumerate(paths, start=1):
        if progress:
            progress(n - 1, len(paths))
        try:
            documents.append(read_pdf(path, doc_id=path.relative_to(base).as_posix(), cache=cache))
        except PdfError as exc:
            problems.append((str(path), str(exc).removeprefix(f"{path}: ")))
    if progress:
        progress(len(paths), len(paths))
    return Folder(Path(root), tuple(documents), tuple(problems))


def read_documents(root: str | Path, progress: Callable[[int, int], None] | None = None, *,
                   cache: PageCache | None = None) -> list[Document]:
    """Read every PDF under `root` (a file or a folder). Raises one PdfError listing every bad file."""
    folder = read_folder(root, progress, cache=cache)
    if not folder.problems:
        return list(folder.documents)
    if Path(root).is_file():  # one file: its own message
        raise PdfError(f"{folder.problems[0][0]}: {folder.problems[0][1]}", problems=folder.problems)
    raise folder.error()


def page_texts(documents: Sequence[Document]) -> dict[str, str]:
    """Page id -> the page's text, over every page of `documents`."""
    return {p.source_id: p.text for d in documents for p in d.pages}


def duplicate_warnings(documents: Sequence[Document]) -> tuple[str, ...]:
    """A warning for each group of files with the same SHA-256: the same pages twice compete in retrieval and
    split the credit for one piece of evidence."""
    groups: dict[str, list[str]] = {}
    for doc in documents:
        groups.setdefault(doc.sha256, []).append(doc.doc_id)
    return tuple(f"{', '.join(ids)} have the same content (SHA-256 {sha[:12]}…); their pages will compete for "
                 "the same questions: keep one copy" for sha, ids in groups.items() if len(ids) > 1)


def read_pdf(path: str | Path, *, doc_id: str | None = None, cache: PageCache | None = None) -> Document:
    """The text of every page of one PDF: from `cache` when it holds this file's bytes, else extracted."""
    path = Path(path)
    data = _read_bytes(path)
    sha = hashlib.sha256(data).hexdigest()
    texts = cache.get(sha) if cache is not None else None
    if texts is None:
        texts = _extract(path, data)
        if cache is not None:
            cache.put(sha, texts)
    name = doc_id or path.name
    pages = tuple(Page(name, number, text) for number, text in enumerate(texts, start=1))
    empty = tuple(p.page for p in pages if not p.text.strip())
    return Document(name, str(path), sha, pages, empty)


def _extract(path: Path, data: bytes) -> list[str]:
    """Every page's text, with pypdf."""
    from pypdf.errors import DependencyError

    texts = []
    for number, page in enumerate(_open(path, data).pages, start=1):
        try:
            texts.append(page.extract_text() or "")
        except DependencyError as exc:
            raise _missing_package(path, exc, page=number) from exc
        except Exception as exc:  # pypdf raises many types on damaged content streams
            raise PdfError(f"{path}: page {number} could not be read ({exc}); the file may be corrupt") from exc
    if not texts:
        raise PdfError(f"{path}: the PDF has no pages")
    return texts


def _read_bytes(path: Path) -> bytes:
    if path.is_symlink() and not path.exists():
        raise PdfError(f"{path}: a symbolic link to a missing file ({os.readlink(path)}); fix or remove the link")
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
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))  # tries an empty password on encrypted files already
    except DependencyError as exc:
        raise _missing_package(path, exc) from exc
    except NotImplementedError as exc:  # an encryption version pypdf does not know, met as it opens the file
        raise _unknown_encryption(path, exc) from exc
    except (PdfReadError, ValueError, OSError, KeyError, TypeError) as exc:
        raise PdfError(f"{path}: the PDF is corrupt and cannot be parsed ({exc})") from exc
    if reader.is_encrypted:
        try:
            # Many PDFs are encrypted only against editing, with an empty user password. AES needs the
            # `cryptography` package, a dependency of this project.
            unlocked = reader.decrypt("")
        except DependencyError as exc:
            raise _missing_package(path, exc) from exc
        except NotImplementedError as exc:
            raise _unknown_encryption(path, exc) from exc
        if not unlocked:
            raise PdfError(f"{path}: the PDF is encrypted with a password; save an unencrypted copy and use that")
    try:
        len(reader.pages)
    except (PdfReadError, FileNotDecryptedError, ValueError, KeyError, TypeError) as exc:
        raise PdfError(f"{path}: the PDF is corrupt and its pages cannot be read ({exc})") from exc
    return reader


def _unknown_encryption(path: Path, exc: NotImplementedError) -> PdfError:
    return PdfError(f"{path}: encrypted with an algorithm pypdf cannot read ({exc}); save an unencrypted copy and "
                    "use that")


def _missing_package(path: Path, exc: DependencyError, *, page: int | None = None) -> PdfError:
    """pypdf needs an optional package for this file (AES needs `cryptography`, a dependency of ours)."""
    where = f"page {page} of this PDF" if page else "this PDF"
    return PdfError(f"{path}: reading {where} needs a package that is not installed ({exc}); install it (for "
                    "encryption: `pip install cryptography`), or save a plain copy of the file")
