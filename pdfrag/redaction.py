"""Secrets never leave: an API key and the credentials of a host URL, cut from everything a client says.

A model-server client knows its secrets (the API key it sends, the user and password of its URL). Whatever it
passes on — an error message, a reply's text, the host it names — goes through its `Redactor` first, so a server
that echoes the key (a 401 saying `Incorrect API key provided: Bearer sk-…`) or a host given as
`http://user:password@host` puts neither into a message, row, manifest, report or export.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["REDACTED", "Redactor", "redacting", "url_secrets", "without_userinfo"]

REDACTED = "[redacted]"
_MIN_SECRET = 4  # shorter values ("EMPTY" is 5; "x" would cut every x) are not secrets worth hiding


def without_userinfo(url: str) -> str:
    """`url` without its `user:password@` part: the form a host is shown and stored in."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials in `url` (the whole user info, the password, each as written and percent-decoded)."""
    try:
        netloc = urlsplit(url or "").netloc
    except ValueError:
        return ()
    if "@" not in netloc:
        return ()
    userinfo = netloc.rpartition("@")[0]
    password = userinfo.partition(":")[2]
    found = [v for v in (userinfo, password) if v]
    return tuple(dict.fromkeys(found + [unquote(v) for v in found]))


class Redactor:
    """Replaces each secret in a text with `REDACTED` (longest first, so a secret holding another goes whole)."""

    def __init__(self, secrets: Iterable[str | None]):
        kept = {s for s in secrets if s and len(s) >= _MIN_SECRET and s != "EMPTY"}
        self.secrets = tuple(sorted(kept, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        if not self.secrets:
            return text
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def exception(self, exc: BaseException) -> BaseException:
        """`exc` with its message redacted, the same type and attributes (cause and context dropped: they hold
        the unredacted text), or `exc` itself when there is nothing to cut."""
        text = str(exc)
        clean = self(text)
        if clean == text and not any(s in repr(exc.__cause__) or s in repr(exc.__context__) for s in self.secrets):
            return exc
        copy = exc.__class__.__new__(exc.__class__)
        copy.__dict__.update(exc.__dict__)
        copy.args = (clean,)
        copy.__cause__, copy.__suppress_context__ = None, True
        return copy


_T = TypeVar("_T", bound=Callable[..., Any])


def redacting(method: _T) -> _T:
    """A client method whose exceptions leave with the client's secrets cut from their message (`self.redact`)."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            clean = self.redact.exception(exc)
            if clean is exc:
                raise
            raise clean from None
    return cast(_T, wrapper)
