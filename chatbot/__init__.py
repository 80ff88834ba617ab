"""A small PDF question-answering chatbot over a model server (Ollama, or any OpenAI-compatible server), with
validated quotes.

The names below are imported on first use (PEP 562), so `import chatbot` (and every CLI that only needs
`pdfrag.errors` or `pdfrag.terminal`) does not pay for `ollama`, `openai`, pydantic, numpy and pypdf at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdfrag._version import __version__
from pdfrag.lazy import lazy_exports

if TYPE_CHECKING:
    from .answer import ANSWER_SCHEMA as ANSWER_SCHEMA
    from .answer import NO_ANSWER as NO_ANSWER
    from .answer import Answer as Answer
    from .answer import AnswerSettings as AnswerSettings
    from .answer import answer_template as answer_template
    from .bot import Chatbot as Chatbot
    from .bot import open_chatbot as open_chatbot
    from .citations import validate_citation as validate_citation
    from .index import EmbedSettings as EmbedSettings
    from .index import Hit as Hit
    from .index import Index as Index
    from .index import build_index as build_index
    from .settings import BotSettings as BotSettings

# The function `answer` is not re-exported: lazily, the name would be its module `chatbot.answer` as soon as that
# is imported; call `chatbot.answer.answer`.
_WHERE = {
    "answer": ("ANSWER_SCHEMA", "NO_ANSWER", "Answer", "AnswerSettings", "answer_template"),
    "bot": ("Chatbot", "open_chatbot"),
    "citations": ("validate_citation",),
    "index": ("EmbedSettings", "Hit", "Index", "build_index"),
    "settings": ("BotSettings",),
}
_names, __getattr__ = lazy_exports("chatbot", _WHERE)
__all__ = [*_names, "__version__"]
