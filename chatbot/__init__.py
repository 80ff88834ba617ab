"""A small PDF question-answering chatbot over a local Ollama server, with validated quotes."""

__version__ = "0.1.0"
