"""A small PDF question-answering chatbot over a model server (Ollama, or any OpenAI-compatible server), with
validated quotes."""

from ._version import __version__
from .answer import ANSWER_SCHEMA, NO_ANSWER, Answer, AnswerSettings, PromptTemplate, answer
from .backends import connect
from .bot import Chatbot, open_chatbot
from .chunking import Chunk, ChunkSettings, chunk_pages
from .citations import CheckedCitation, validate_citation
from .errors import RagError
from .index import EmbedSettings, Hit, Index, build_index
from .model_server import ClientSettings, ModelServer, preflight
from .ollama_client import OllamaClient
from .openai_client import OpenAIClient
from .pdfs import Document, Page, read_documents
from .text import normalize

__all__ = [
    "ANSWER_SCHEMA", "NO_ANSWER", "Answer", "AnswerSettings", "Chatbot", "CheckedCitation", "Chunk", "ChunkSettings",
    "ClientSettings", "Document", "EmbedSettings", "Hit", "Index", "ModelServer", "OllamaClient", "OpenAIClient",
    "Page", "PromptTemplate", "RagError", "__version__", "answer", "build_index", "chunk_pages", "connect",
    "normalize", "open_chatbot", "preflight",
    "read_documents", "validate_citation",
]
