"""Every exception the project raises on purpose. Messages say what to do next."""

from __future__ import annotations


class RagError(Exception):
    """Base class: the CLIs catch this, print the message and exit non-zero."""

    exit_code = 1


class InputError(RagError):
    """Bad user input (a file, a flag, a label). Exit code 2."""

    exit_code = 2


class PdfError(InputError):
    """A PDF could not be read. The message names the file."""


class OllamaError(RagError):
    """Anything that went wrong talking to the model server."""


class ServerUnreachable(OllamaError):
    """No server answered at the host, or it dropped the connection and kept doing so."""


class ModelMissing(OllamaError):
    """The server answered but does not have the model."""


class ServerBusy(OllamaError):
    """The server kept answering 503 after every retry."""


class OllamaTimeout(OllamaError):
    """A call took longer than the configured timeout."""


class InputTooLong(OllamaError):
    """A text is longer than the model's context; the server would have cut it silently."""

    def __init__(self, message: str, *, item_index: int | None = None):
        super().__init__(message)
        self.item_index = item_index  # which input of an embedding call, when known


class BadReply(OllamaError):
    """The server answered with something we cannot use (not the API's shape, an error status)."""
