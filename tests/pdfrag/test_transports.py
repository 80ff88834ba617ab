"""`PooledTransports`: many threads' requests through small connection pools that are reused, not made per request
(the OpenAI backend's transport; bench/bench_openai.py), against the real local test server."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx2

from pdfrag.bounded_http import BoundedTransport
from pdfrag.model_server import ClientSettings
from pdfrag.openai_client import OpenAIClient
from pdfrag.transports import PooledTransports


def test_threads_reuse_the_pools_and_every_reply_is_whole(server):
    transports = PooledTransports()
    client = httpx2.Client(transport=transports)  # one client shared by the threads, as --workers share one
    gate = threading.Barrier(4)

    def four_requests(_: int) -> list[int]:
        gate.wait()  # four requests in flight at once, then each thread asks again on a free pool
        return [len(client.get(server.url + "/api/tags").json()["models"]) for _ in range(4)]

    with ThreadPoolExecutor(4) as pool:
        counts = [n for batch in pool.map(four_requests, range(4)) for n in batch]
    assert counts == [2] * 16 and server.count("/api/tags") == 16
    assert 1 <= transports.made <= 4  # at most one pool per request in flight, not one per request
    client.close()


def test_a_response_closed_unread_gives_its_pool_back_and_close_closes_all(server):
    transports = PooledTransports()
    client = httpx2.Client(transport=transports)
    with client.stream("GET", server.url + "/api/tags"):
        pass  # closed without reading the body
    assert client.get(server.url + "/api/version").status_code == 200
    assert transports.made == 1  # the second request found the first one's pool free
    client.close()
    assert transports.made == 0


def test_the_openai_backend_sends_through_it(server):
    client = OpenAIClient(ClientSettings(host=server.url + "/v1", backend="openai"))
    assert client.identify(chat_model="qwen3:4b", embed_model=None).kind is not None
    bounded = client._client._client._transport  # noqa: SLF001 - the wiring itself
    assert isinstance(bounded, BoundedTransport) and isinstance(bounded._inner, PooledTransports)
