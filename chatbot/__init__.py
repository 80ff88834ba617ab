"""A small PDF question-answering chatbot over a model server (Ollama, or any OpenAI-compatible server), with
validated quotes.

The names below are imported on first use (PEP 562), so `import chatbot` (and every CLI that only needs
`chatbot.errors` or `chatbot.terminal`) does not pay for `ollama`, `openai`, pydantic, numpy and pypdf at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__
from .lazy import lazy_exports

if TYPE_CHECKING:
    from .answer import ANSWER_SCHEMA as ANSWER_SCHEMA
    from .answer import NO_ANSWER as NO_ANSWER
    from .answer import Answer as Answer
    from .answer import AnswerSettings as AnswerSettings
    from .answer import answer_template as answer_template
    from .asking import PromptTemplate as PromptTemplate
    from .backends import connect as connect
    from .bot import Chatbot as Chatbot
    from .bot import open_chatbot as open_chatbot
    from .chunking import Chunk as Chunk
    from .chunking import ChunkSettings as ChunkSettings
    from .chunking import chunk_pages as chunk_pages
    from .citations import CheckedCitation as CheckedCitation
    from .citations import validate_citation as validate_citation
    from .errors import RagError as RagError
    from .index import EmbedSettings as EmbedSettings
    from .index import Hit as Hit
    from .index import Index as Index
    from .index import build_index as build_index
    from .model_server import ClientSettings as ClientSettings
    from .model_server import ModelServer as ModelServer
    from .model_server import preflight as preflight
    from .ollama_client import OllamaClient as OllamaClient
    from .openai_client import OpenAIClient as OpenAIClient
    from .pdfs import Document as Document
    from .pdfs import Page as Page
    from .pdfs import read_documents as read_documents
    from .text import normalize as normalize

# The function `answer` is not re-exported: lazily, the name would be its module `chatbot.answer` as soon as that
# is imported; call `chatbot.answer.answer`.
_WHERE = {
    "answer": ("ANSWER_SCHEMA", "NO_ANSWER", "Answer", "AnswerSettings", "answer_template"),
    "asking": ("PromptTemplate",),
    "backends": ("connect",),
    "bot": ("Chatbot", "open_chatbot"),
    "chunking": ("Chunk", "ChunkSettings", "chunk_pages"),
    "citations": ("CheckedCitation", "validate_citation"),
    "errors": ("RagError",),
    "index": ("EmbedSettings", "Hit", "Index", "build_index"),
    "model_server": ("ClientSettings", "ModelServer", "preflight"),
    "ollama_client": ("OllamaClient",),
    "openai_client": ("OpenAIClient",),
    "pdfs": ("Document", "Page", "read_documents"),
    "text": ("normalize",),
}
_names, __getattr__ = lazy_exports("chatbot", _WHERE)
__all__ = [*_names, "__version__"]
