"""Choosing a model server: the client of the API a `ClientSettings` names (`backend`: ollama or openai)."""

from __future__ import annotations

from .model_server import BACKENDS, ClientSettings, ModelServer
from .ollama_client import OllamaClient, resolve_host
from .openai_client import OpenAIClient, resolve_base_url

__all__ = ["BACKENDS", "connect", "resolve_address"]


def connect(settings: ClientSettings) -> ModelServer:
    """A client of the server at `settings.host` speaking `settings.backend`."""
    if settings.backend == "openai":
        return OpenAIClient(settings)
    return OllamaClient(settings)


def resolve_address(host: str | None, backend: str = "ollama") -> str:
    """The address a client of `backend` would use for `host` (None: the backend's environment variable, then
    its default): $OLLAMA_HOST for ollama, $OPENAI_BASE_URL for openai."""
    return resolve_base_url(host) if backend == "openai" else resolve_host(host)
