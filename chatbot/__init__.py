"""A small PDF question-answering chatbot over a local Ollama server, with validated quotes."""

__version__ = "0.1.0"

from .answer import ANSWER_SCHEMA, NO_ANSWER, Answer, AnswerSettings, PromptTemplate, answer  # noqa: E402
from .bot import Chatbot, open_chatbot  # noqa: E402
from .chunking import Chunk, ChunkSettings, chunk_pages  # noqa: E402
from .citations import Citation, validate_citation  # noqa: E402
from .errors import RagError  # noqa: E402
from .index import EmbedSettings, Hit, Index, build_index  # noqa: E402
from .ollama_client import ClientSettings, OllamaClient, preflight  # noqa: E402
from .pdfs import Document, Page, read_documents  # noqa: E402
from .text import normalize  # noqa: E402

__all__ = [
    "ANSWER_SCHEMA", "NO_ANSWER", "Answer", "AnswerSettings", "Chatbot", "Chunk", "ChunkSettings", "Citation",
    "ClientSettings", "Document", "EmbedSettings", "Hit", "Index", "OllamaClient", "Page", "PromptTemplate",
    "RagError", "__version__", "answer", "build_index", "chunk_pages", "normalize", "open_chatbot", "preflight",
    "read_documents", "validate_citation",
]
