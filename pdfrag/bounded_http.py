"""Bounded HTTP to servers we did not write (model servers, RAG services under evaluation): a total deadline per
request, a cap on the decoded body, no redirects followed. Every outside service is reached through it.

httpx's timeouts are per socket operation, so a server that drips its headers or body a byte at a time, or streams
without end, is never timed out by them. `BoundedTransport` gives every request a deadline `timeout_s` from its
start: each socket operation (connect, TLS, each write and read, headers included) gets at most the time left, and
the body is read under the same deadline. The body is decoded here (gzip or deflate, the only encodings asked for),
a bounded piece at a time, and refused (`BodyTooLarge`) as soon as it passes `max_body_bytes`: no more of it is
read or held, and a gzip bomb expands no further. A 3xx is refused (`Redirected`), naming its Location: a server
that redirects would send the prompt and the passages elsewhere. `abort()` shuts every open socket, so requests in
flight in other threads fail at once (Ctrl-C).

The Ollama client speaks through `ollama` over httpx, the OpenAI-compatible client through `openai` over httpx2, the
HTTP system through httpx: the two packages share their API, so this one piece of code serves both (`flavour` is
the package's module). `json_body` reads a reply's JSON with its nesting as a bound too: a body nested deeper than
the parser follows is refused (`NestedTooDeep`), never a RecursionError. httpx has no public way to hand its
connection pool a network backend: the pool's own attribute is set, and a version that moved it fails loudly here
rather than silently losing every deadline.
"""

from __future__ import annotations

import importlib
import json
import socket
import threading
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BodyEncoding", "BodyTooLarge", "BoundedTransport", "Bounds", "BoundsExceeded",
           "NestedTooDeep", "Redirected", "env_proxy", "json_body", "read_head", "tls_context"]

DEFAULT_MAX_BODY_BYTES = 10_000_000  # decoded bytes of one reply: far above the longest answer or embedding batch
_DEADLINE: ContextVar[float | None] = ContextVar("bounded_http_deadline", default=None)
_PIECE = 64 * 1024  # bytes decompressed at a time
_CORE = {"httpx": "httpcore", "httpx2": "httpcore2"}


@dataclass(frozen=True)
class Bounds:
    """What a request may take: `timeout_s` from its start to the body's last byte, `max_body_bytes` decoded."""

    timeout_s: float
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


class BoundsExceeded(Exception):
    """A reply outside the bounds: too large, an encoding not asked for, or a redirect."""


class BodyTooLarge(BoundsExceeded):
    """The decoded body passed the cap; nothing more of it was read."""


class BodyEncoding(BoundsExceeded):
    """The body's Content-Encoding is not one asked for, or it does not decode."""


class NestedTooDeep(BoundsExceeded):
    """The JSON body nests deeper than the parser follows (about 1,000 levels; no reply of an API we read needs
    more than ten)."""

    def __init__(self) -> None:
        super().__init__("the JSON body is nested too deeply to read (over about 1,000 levels), which no reply of "
                         "the API is")


def json_body(text: str | bytes) -> Any:
    """`json.loads(text)`, with nesting too deep to parse raised as NestedTooDeep: the C parser stops at the
    recursion limit at once (a body nested 200,000 deep fails in microseconds), so the error is caught here, at
    the one place replies are parsed, rather than the depth counted before."""
    try:
        return json.loads(text)
    except RecursionError:
        raise NestedTooDeep() from None


class Redirected(BoundsExceeded):
    """The server answered with a redirect, which is not followed."""

    def __init__(self, status: int, location: str):
        super().__init__(f"HTTP {status}, a redirect to {location!r}, which is not followed")
        self.status, self.location = status, location


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """The time a socket operation may take: its own timeout, but never past the request's deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """One connection's socket stream (an httpcore NetworkStream), its every operation under the deadline."""

    def __init__(self, stream: Any, backend: _Backend):
        self._stream, self._backend = stream, backend
        backend.opened(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, self._backend.core.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, self._backend.core.WriteTimeout))

    def close(self) -> None:
        self._backend.closed(self)
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        self._backend.closed(self)
        left = _left(timeout, self._backend.core.ConnectTimeout)
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, left), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)

    def abort(self) -> None:
        sock = self.get_extra_info("socket")
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it; close() alone does not
        except (OSError, AttributeError):
            pass


class _Backend:
    """httpcore's own sync network backend, with the deadline applied and the open streams known."""

    def __init__(self, core: ModuleType):
        self.core = core
        self._inner = core.SyncBackend()
        self._open: set[_Stream] = set()
        self._lock = threading.Lock()
        self._aborted = False

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> _Stream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout, self.core.ConnectTimeout), local_address,
                                               socket_options), self)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> _Stream:
        return _Stream(self._inner.connect_unix_socket(path, _left(timeout, self.core.ConnectTimeout),
                                                       socket_options), self)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def opened(self, stream: _Stream) -> None:
        with self._lock:
            self._open.add(stream)
            aborted = self._aborted
        if aborted:  # connected while abort_all ran: it fails too
            stream.abort()

    def closed(self, stream: _Stream) -> None:
        with self._lock:
            self._open.discard(stream)

    def abort_all(self) -> None:
        with self._lock:
            self._aborted = True
            streams = list(self._open)
        for stream in streams:
            stream.abort()


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY; NO_PROXY honoured), as
    httpx would pick it if it built the transport itself."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


_TLS: dict[str, Any] = {}  # per flavour, the one TLS context, made on first use


def tls_context(flavour: ModuleType) -> Any:
    """The flavour's default TLS context (certifi's CA bundle, or SSL_CERT_FILE), made once: making one costs
    40-90 ms, which every client would pay, e.g. once per cell of a sweep."""
    if flavour.__name__ not in _TLS:
        _TLS[flavour.__name__] = flavour.create_ssl_context()
    return _TLS[flavour.__name__]


class BoundedTransport(httpx.BaseTransport):  # also an httpx2 transport: the two share the protocol
    """A transport of `flavour` (the httpx or httpx2 module) whose requests each have `bounds`. `pool` makes the
    inner transport from a factory of plain HTTP transports (openai's per-request pools); else one plain transport
    serves every request. Pass it as `transport=` with `follow_redirects=False` and `trust_env=False` (the proxy the
    environment names is applied here, `url` deciding which; with `env_proxies=False` none is: model servers)."""

    def __init__(self, flavour: ModuleType, bounds: Bounds, url: str, *, verify: Any = None,
                 pool: Callable[[Callable[[], Any]], Any] | None = None, env_proxies: bool = True):
        self.flavour, self.bounds = flavour, bounds
        self._backend = _Backend(importlib.import_module(_CORE[flavour.__name__]))
        proxy = env_proxy(url) if env_proxies else None

        def plain() -> Any:
            transport = flavour.HTTPTransport(verify=tls_context(flavour) if verify is None else verify, proxy=proxy)
            if not hasattr(transport._pool, "_network_backend"):
                raise RuntimeError(f"{flavour.__name__} {flavour.__version__}: its connection pool has no "
                                   "_network_backend; pdfrag/bounded_http.py needs updating")
            transport._pool._network_backend = self._backend
            return transport

        self._inner = pool(plain) if pool is not None else plain()
        self._body = type("BoundedBody", (_Body, flavour.SyncByteStream), {})

    def handle_request(self, request: Any) -> Any:
        deadline = time.monotonic() + self.bounds.timeout_s
        request.headers["Accept-Encoding"] = "gzip, deflate"  # the encodings decoded here, and only those
        token = _DEADLINE.set(deadline)
        try:
            response = self._inner.handle_request(request)
        finally:
            _DEADLINE.reset(token)
        if 300 <= response.status_code < 400 and "location" in response.headers:
            response.close()
            raise Redirected(response.status_code, response.headers["location"])
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            response.close()
            raise BodyEncoding(f"Content-Encoding {encoding!r} is not decoded here; send gzip, deflate or none")
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in (b"content-encoding", b"content-length")]
        body = self._body(response.stream, encoding, deadline, self.bounds.max_body_bytes, self.flavour.ReadTimeout)
        return self.flavour.Response(response.status_code, headers=headers, stream=body,
                                     extensions=response.extensions)

    def abort(self) -> None:
        """Make every request in flight fail now."""
        self._backend.abort_all()

    def close(self) -> None:
        self._inner.close()


class _Body:
    """A response body read under its request's deadline, decoded a bounded piece at a time, refused past the cap.
    (Made a SyncByteStream of the transport's flavour by `BoundedTransport`.)"""

    def __init__(self, inner: Any, encoding: str, deadline: float, cap: int, timeout: type[Exception]):
        self._inner, self._encoding, self._deadline, self._cap, self._timeout = inner, encoding, deadline, cap, timeout

    def __iter__(self) -> Iterator[bytes]:
        total = 0
        for piece in self._decoded():
            total += len(piece)
            if total > self._cap:
                raise BodyTooLarge(f"the body passed {self._cap:,} bytes (decoded)")
            yield piece

    def _raw(self) -> Iterator[bytes]:
        chunks = iter(self._inner)
        while True:
            if time.monotonic() >= self._deadline:
                raise self._timeout("the request's deadline passed while its body was read")
            token = _DEADLINE.set(self._deadline)
            try:
                chunk = next(chunks, None)
            finally:
                _DEADLINE.reset(token)
            if chunk is None:
                return
            yield chunk

    def _decoded(self) -> Iterator[bytes]:
        if self._encoding in ("", "identity"):
            yield from self._raw()
            return
        inflate = zlib.decompressobj(wbits=47)  # 32 + 15: a gzip or a zlib header, found from the data
        try:
            for raw in self._raw():
                data = raw
                while data:
                    yield inflate.decompress(data, _PIECE)  # a bounded piece, however much the data expands
                    data = inflate.unconsumed_tail
            yield inflate.flush()
        except zlib.error as exc:
            raise BodyEncoding(f"the {self._encoding} body does not decode ({exc})") from exc

    def close(self) -> None:
        self._inner.close()


def read_head(response: Any, limit: int) -> bytes:
    """At most the first `limit` bytes of a streamed `response` (an error page, say); the rest unread."""
    head = bytearray()
    for piece in response.iter_bytes():
        head += piece
        if len(head) >= limit:
            break
    return bytes(head[:limit])
