"""An HTTP transport for many requests in flight from many threads: one small connection pool per request in
flight instead of one pool shared by all of them.

httpcore's pool scans every connection it holds and every request waiting, under one lock, twice per request; at
64-256 workers against one URL that costs more CPU than the rest of the request (bench/bench_openai.py: 3.3-4.0 ms
against 2.6 ms of process CPU per chat completion through `openai` at 256 threads, 2.5-2.8 ms against 1.7-2.2 ms at
64). Here a request takes an idle pool (else makes one) and gives it back when its response is closed, so each pool
mostly holds one kept-alive connection. The pools share one SSL context (making one costs ~40 ms). Timeouts,
redirects and retries stay with the client and the caller, as with the default transport.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import httpx2

__all__ = ["PooledTransports"]


class PooledTransports(httpx2.BaseTransport):
    """`httpx2.HTTPTransport`s made as needed, one per request in flight; `close()` closes them all."""

    def __init__(self, make: Callable[[], httpx2.HTTPTransport] | None = None):
        if make is None:
            context = httpx2.create_ssl_context()
            make = lambda: httpx2.HTTPTransport(verify=context)  # noqa: E731
        self._make = make
        self._idle: list[httpx2.HTTPTransport] = []
        self._made: list[httpx2.HTTPTransport] = []
        self._open = True
        self._lock = threading.Lock()

    @property
    def made(self) -> int:
        """How many pools are open: the most requests that were in flight at once (0 after `close()`)."""
        return len(self._made)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        transport = self._take()
        try:
            response = transport.handle_request(request)
        except BaseException:
            self._give_back(transport)
            raise
        if not isinstance(response.stream, httpx2.SyncByteStream):  # not from HTTPTransport: nothing to wait for
            self._give_back(transport)
            return response
        response.stream = _GivenBackOnClose(response.stream, lambda: self._give_back(transport))
        return response

    def close(self) -> None:
        with self._lock:
            made, self._made, self._idle, self._open = self._made, [], [], False
        for transport in made:
            transport.close()

    def _take(self) -> httpx2.HTTPTransport:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        transport = self._make()
        with self._lock:
            self._made.append(transport)
        return transport

    def _give_back(self, transport: httpx2.HTTPTransport) -> None:
        with self._lock:
            if self._open:  # after close() it is closed, not reused
                self._idle.append(transport)


class _GivenBackOnClose(httpx2.SyncByteStream):
    """A response body that hands its pool back once closed (read to the end, or closed early)."""

    def __init__(self, inner: httpx2.SyncByteStream, give_back: Callable[[], None]):
        self._inner, self._give_back, self._closed = inner, give_back, False

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            if not self._closed:
                self._closed = True
                self._give_back()
