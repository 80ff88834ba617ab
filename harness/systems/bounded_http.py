"""Bounded HTTP to services we did not write: a total deadline per call and a cap on the decoded body.

httpx's timeouts are per socket operation, so a service that drips its headers or body a byte at a time, or
streams without end, is never timed out by them. Here every socket operation of a call (connect, TLS, each write
and each read, headers included) gets at most the time left before the call's deadline, so `--timeout` holds from
connect to last byte. Bodies are read as they arrive and decompressed here, a bounded piece at a time, so
neither a huge body nor a gzip bomb is ever held past the cap. `abort_all()` shuts every open socket, so calls in
flight in other threads fail at once (Ctrl-C).
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

_DEADLINE: ContextVar[float | None] = ContextVar("harness_http_deadline", default=None)
_PIECE = 64 * 1024  # bytes decompressed at a time


class BodyTooLarge(Exception):
    """The decoded body passed the cap; nothing more of it was read."""


class BodyEncoding(Exception):
    """The body's Content-Encoding is not one we decode, or it does not decode."""


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """The time a socket operation may take: its own timeout, but never past the call's deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, backend: _Backend):
        self._stream, self._backend = stream, backend
        backend.opened(self)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._backend.closed(self)
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        self._backend.closed(self)
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)),
                       self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)

    def abort(self) -> None:
        sock = self.get_extra_info("socket")
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it; close() alone does not
        except (OSError, AttributeError):
            pass


class _Backend(httpcore.NetworkBackend):
    """httpcore's own sync backend, with the deadline applied and the open streams known."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()
        self._open: set[_Stream] = set()
        self._lock = threading.Lock()
        self._aborted = False

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), local_address,
                                               socket_options), self)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options),
                       self)

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


class BoundedClient:
    """An httpx client whose calls each have a total deadline, with bodies read under a byte cap."""

    def __init__(self, timeout_s: float, url: str):
        self.timeout_s = timeout_s
        transport = httpx.HTTPTransport(proxy=env_proxy(url))
        self._backend = _Backend()
        # httpx has no public way to hand httpcore a network backend; this pool is httpx's own, unchanged else.
        # Fail loudly if a new httpx moved it: silently, every deadline would be gone.
        pool = transport._pool
        if not hasattr(pool, "_network_backend"):
            raise RuntimeError(f"httpx {httpx.__version__}: its connection pool has no _network_backend; "
                               "harness/systems/bounded_http.py needs updating")
        pool._network_backend = self._backend
        self.client = httpx.Client(transport=transport, timeout=timeout_s, follow_redirects=False,
                                   headers={"Accept-Encoding": "gzip, deflate"})

    @contextmanager
    def call(self) -> Iterator[None]:
        """Socket operations inside this block end by `timeout_s` from its start (httpx.TimeoutException)."""
        token = _DEADLINE.set(time.monotonic() + self.timeout_s)
        try:
            yield
        finally:
            _DEADLINE.reset(token)

    def abort(self) -> None:
        """Make every call in flight fail now, and close the client."""
        self._backend.abort_all()
        self.client.close()


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY; NO_PROXY honoured), as
    httpx would pick it if it built the transport itself."""
    target = httpx.URL(url)
    if urllib.request.proxy_bypass(target.host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(target.scheme) or proxies.get("all")


def read_body(response: httpx.Response, cap: int) -> bytearray:
    """The decoded body of a streamed `response`, refused (BodyTooLarge) as soon as it passes `cap` bytes."""
    body = bytearray()
    for piece in _decoded(response):
        body += piece
        if len(body) > cap:
            raise BodyTooLarge(f"the body passed {cap:,} bytes (decoded)")
    return body


def read_head(response: httpx.Response, limit: int) -> bytes:
    """At most the first `limit` decoded bytes of a streamed `response` (an error page, say); the rest unread."""
    head = bytearray()
    for piece in _decoded(response):
        head += piece
        if len(head) >= limit:
            break
    return bytes(head[:limit])


def _decoded(response: httpx.Response) -> Iterator[bytes]:
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        yield from response.iter_raw()
        return
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise BodyEncoding(f"Content-Encoding {encoding!r} is not decoded here; send gzip, deflate or none")
    inflate = zlib.decompressobj(wbits=47)  # 32 + 15: a gzip or a zlib header, found from the data
    try:
        for raw in response.iter_raw():
            data = raw
            while data:
                yield inflate.decompress(data, _PIECE)  # a bounded piece, however much the data expands
                data = inflate.unconsumed_tail
        yield inflate.flush()
    except zlib.error as exc:
        raise BodyEncoding(f"the {encoding} body does not decode ({exc})") from exc
