"""A small PDF question-answering chatbot over a local Ollama server, with validated quotes."""

from ._version import __version__
from .answer import ANSWER_SCHEMA, NO_ANSWER, Answer, AnswerSettings, PromptTemplate, answer
from .bot import Chatbot, open_chatbot
from .chunking import Chunk, ChunkSettings, chunk_pages
from .citations import CheckedCitation, validate_citation
from .errors import RagError
from .index import EmbedSettings, Hit, Index, build_index
from .ollama_client import ClientSettings, OllamaClient, preflight
from .pdfs import Document, Page, read_documents
from .text import normalize

__all__ = [
    "ANSWER_SCHEMA", "NO_ANSWER", "Answer", "AnswerSettings", "CheckedCitation", "Chatbot", "Chunk", "ChunkSettings",
    "ClientSettings", "Document", "EmbedSettings", "Hit", "Index", "OllamaClient", "Page", "PromptTemplate",
    "RagError", "__version__", "answer", "build_index", "chunk_pages", "normalize", "open_chatbot", "preflight",
    "read_documents", "validate_citation",
]
