"""The ground floor that `chatbot` (the bundled RAG system) and `harness` (the evaluator) stand on; it imports
neither.

Model-server access: the seam (`model_server`), the Ollama and OpenAI-compatible clients, their bounded transport,
pooled transports, the host pool, the asker and the reply cache. Documents and text: PDFs, the page cache, chunking,
`normalize()`, quote validation, BM25. Plumbing: safe files (atomic writes, no link followed) and locks, terminal
output, lazy exports, versions, the error root (`RagError`) and the version.

The names below are imported on first use (PEP 562), so `import pdfrag` does not pay for `ollama`, `openai`,
pydantic, numpy and pypdf at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__
from .lazy import lazy_exports

if TYPE_CHECKING:
    from .asking import PromptTemplate as PromptTemplate
    from .backends import connect as connect
    from .chunking import Chunk as Chunk
    from .chunking import ChunkSettings as ChunkSettings
    from .chunking import chunk_pages as chunk_pages
    from .citations import CheckedCitation as CheckedCitation
    from .errors import RagError as RagError
    from .model_server import ClientSettings as ClientSettings
    from .model_server import ModelServer as ModelServer
    from .model_server import preflight as preflight
    from .ollama_client import OllamaClient as OllamaClient
    from .openai_client import OpenAIClient as OpenAIClient
    from .pdfs import Document as Document
    from .pdfs import Page as Page
    from .pdfs import read_documents as read_documents
    from .text import normalize as normalize

_WHERE = {
    "asking": ("PromptTemplate",),
    "backends": ("connect",),
    "chunking": ("Chunk", "ChunkSettings", "chunk_pages"),
    "citations": ("CheckedCitation",),
    "errors": ("RagError",),
    "model_server": ("ClientSettings", "ModelServer", "preflight"),
    "ollama_client": ("OllamaClient",),
    "openai_client": ("OpenAIClient",),
    "pdfs": ("Document", "Page", "read_documents"),
    "text": ("normalize",),
}
_names, __getattr__ = lazy_exports("pdfrag", _WHERE)
__all__ = [*_names, "__version__"]
