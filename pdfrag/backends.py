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
    _check_address(resolve_address(settings.host, settings.backend), settings.backend)
    _check_path(settings.host, settings.backend, settings.host_flag)
    if settings.backend == "openai":
        return OpenAIClient(settings)
    return OllamaClient(settings)


def resolve_address(host: str | None, backend: str = "ollama") -> str:
    """The address a client of `backend` would use for `host` (None: the backend's environment variable, then
    its default): $OLLAMA_HOST for ollama, $OPENAI_BASE_URL for openai."""
    return resolve_base_url(host) if backend == "openai" else resolve_host(host)


def _check_address(address: str, backend: str) -> None:
    """An address an HTTP client can send to: no control character or space (a CR LF would end the request line
    early; the address is not echoed, it may hold a password) and http or https (Ollama's may name no scheme)."""
    source, example = (("--host / OPENAI_BASE_URL", "http://127.0.0.1:8000/v1") if backend == "openai" else
                       ("--host / OLLAMA_HOST", "http://127.0.0.1:11434"))
    at = next((i for i, c in enumerate(address) if c.isspace() or not c.isprintable()), None)
    if at is not None:
        raise InputError(f"{source}: the address holds U+{ord(address[at]):04X} (a space, line end or control "
                         f"character) at character {at + 1}; give the address alone, e.g. {example}")
    if "://" not in address:
        if backend == "openai":  # Ollama's client reads HOST:PORT as http://HOST:PORT; openai's reads no such thing
            raise InputError(f"{source}: the address names no http:// or https://; give the base URL, e.g. {example}")
        return
    scheme = address.split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise InputError(f"{source}: a {scheme}:// address; model servers are reached over HTTP: give the "
                         "server's http:// or https:// URL")


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
