"""Choosing a model server: the client of the API a `ClientSettings` names (`backend`: ollama or openai)."""

from __future__ import annotations

from urllib.parse import urlsplit

from .errors import InputError
from .model_server import BACKENDS, ClientSettings, ModelServer
from .ollama_client import OllamaClient, resolve_host
from .openai_client import OpenAIClient, resolve_base_url

__all__ = ["BACKENDS", "connect", "resolve_address"]


def connect(settings: ClientSettings) -> ModelServer:
    """A client of the server at `settings.host` speaking `settings.backend`. A host whose path is the other API's
    (`/v1` for Ollama's native client, `/api` for the OpenAI-compatible one) is refused with the flag to give."""
    _check_path(settings.host, settings.backend, settings.host_flag)
    if settings.backend == "openai":
        return OpenAIClient(settings)
    return OllamaClient(settings)


def resolve_address(host: str | None, backend: str = "ollama") -> str:
    """The address a client of `backend` would use for `host` (None: the backend's environment variable, then
    its default): $OLLAMA_HOST for ollama, $OPENAI_BASE_URL for openai."""
    return resolve_base_url(host) if backend == "openai" else resolve_host(host)


def _check_path(host: str | None, backend: str, flag: str) -> None:
    path = urlsplit(host or "").path.rstrip("/")
    if backend == "ollama" and path.endswith("/v1"):
        raise InputError(f"{flag} {host} ends with /v1, the OpenAI-compatible API's path, but --backend is ollama "
                         "(Ollama's native API, at the server's root): add --backend openai to use that API, or "
                         "give the server's root (for example http://127.0.0.1:11434)")
    if backend == "openai" and path.endswith("/api"):
        raise InputError(f"{flag} {host} ends with /api, Ollama's native API's path, but --backend is openai: "
                         "give --backend ollama with the server's root, or the OpenAI-compatible base URL (ending "
                         "in /v1)")
