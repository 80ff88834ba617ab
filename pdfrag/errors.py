"""Every exception the project raises on purpose. Messages say what to do next."""

from __future__ import annotations


class RagError(Exception):
    """Base class: the CLIs catch this, print the message and exit non-zero."""

    exit_code = 1


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (what `timeout`, CI runners, `docker stop` and a closed terminal send), raised in the main
    thread like Ctrl-C's KeyboardInterrupt, so every path that stops cleanly on Ctrl-C (children ended, temporary
    files removed, a live run left resumable) does the same on them. The exit code is 128 + the signal's number."""

    def __init__(self, signum: int, name: str):
        super().__init__(name)
        self.signum, self.name = signum, name


class InputError(RagError):
    """Bad user input (a file, a flag, a label). Exit code 2."""

    exit_code = 2


class PdfError(InputError):
    """A PDF could not be read. The message names the file; `problems` lists (path, problem) for every bad file
    when a whole folder was read."""

    def __init__(self, message: str, *, problems: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.problems = problems


class ModelServerError(RagError):
    """Anything that went wrong talking to the model server."""


class ServerUnreachable(ModelServerError):
    """No server answered at the host, or it dropped the connection and kept doing so."""


class ModelMissing(ModelServerError):
    """The server answered but does not have the model."""


class ServerBusy(ModelServerError):
    """The server kept answering 503 after every retry."""


class ServerTimeout(ModelServerError):
    """A call took longer than the configured timeout."""


class InputTooLong(ModelServerError):
    """A text is longer than the model's context (or, on llama.cpp's embeddings, its physical batch); the server
    refused it, or would have cut it silently."""

    def __init__(self, message: str, *, item_index: int | None = None, server_said: str = "",
                 server_fix: str = ""):
        super().__init__(message)
        self.item_index = item_index  # which input of an embedding call, when known
        self.server_said = server_said  # the server's own words, quoted in every message built on this one
        self.server_fix = server_fix  # what to change on the server; callers add what to change in the harness

    def at(self, item_index: int) -> InputTooLong:
        """The same refusal naming input `item_index`."""
        return InputTooLong(str(self), item_index=item_index, server_said=self.server_said,
                            server_fix=self.server_fix)


class BadReply(ModelServerError):
    """The server answered with something we cannot use (not the API's shape, an error status, NaN vectors)."""

    def __init__(self, message: str, *, item_index: int | None = None):
        super().__init__(message)
        self.item_index = item_index  # which input of an embedding call, when known


class GenerationAborted(BadReply):
    """The server stopped generating before the end (repeated-token limit): the reply is unusable, but the
    question, not the setup, is at fault. `partial` is the content that came before the abort."""

    def __init__(self, message: str, *, partial: str = ""):
        super().__init__(message)
        self.partial = partial
