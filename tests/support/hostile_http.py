"""A RAG service on 127.0.0.1 that misbehaves by case id, for the hardening tests and bench/bench_http_memory.py.

It speaks the HTTP system contract (POST `{"case_id", "question"}`); the case id names what it does. Nothing it
sends is held in its own memory whole: huge bodies are written piece by piece as the client reads them. It does
not answer questions: a `fine-*` case gets the hotel page's sentence, every time, by this rule.

Run it by hand: `python -m tests.support.hostile_http --port 8766` (it prints its URL).
"""

from __future__ import annotations

import argparse
import functools
import json
import socket
import ssl
import struct
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOTEL_PAGE = "handbook.pdf#p2"
HOTEL = "Hotel costs are reimbursed up to EUR 160 per night"
GOOD = {"answer": "EUR 160 per night", "abstained": False, "retrieved": [{"source_id": HOTEL_PAGE, "text": HOTEL}],
        "citations": [{"source_id": HOTEL_PAGE, "quote": "reimbursed up to EUR 160 per night"}]}
PIECE = b"x" * 65536
GIB = 1 << 30


@functools.lru_cache(maxsize=2)
def gzip_bomb(expanded: int) -> bytes:
    """`expanded` zero bytes, gzipped (about 1000:1), built a megabyte at a time; cached per size."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: a gzip member
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(expanded >> 20)) + packer.flush()


class Handler(BaseHTTPRequestHandler):
    """One behaviour per case id; see BEHAVIOURS. `server.seen` counts requests per case id."""

    protocol_version = "HTTP/1.1"
    server: HostileServer

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        case_id = str(body.get("case_id"))
        with self.server.lock:
            self.server.seen[case_id] = self.server.seen.get(case_id, 0) + 1
        kind = case_id.split("-")[0] if case_id.split("-")[0] in BEHAVIOURS else case_id
        try:
            BEHAVIOURS.get(kind, _fine)(self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the harness stopped reading, as it should

    def do_GET(self) -> None:  # noqa: N802 - the harness's cheap probe: this service is alive
        if self.server.dead:
            self.close_connection = True
            return
        self.send(405, b"POST a question here")

    def send(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in {"Content-Length": str(len(data)), **(headers or {})}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def stream(self, status: int, total: int | None, headers: dict[str, str] | None = None) -> None:
        """`total` bytes of x (None: chunked, without end), written as the client reads them."""
        self.send_response(status)
        self.send_header(*(("Content-Length", str(total)) if total is not None else ("Transfer-Encoding", "chunked")))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        sent = 0
        while total is None or sent < total:
            piece = PIECE if total is None else PIECE[:total - sent]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if total is None else piece)
            sent += len(piece)
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


def _fine(h: Handler) -> None:
    if h.server.dead:
        h.close_connection = True
        return
    h.send(200, json.dumps(GOOD).encode(), {"Content-Type": "application/json"})


def _drop(h: Handler) -> None:  # no status line, no body: RemoteProtocolError
    h.close_connection = True


def _dies(h: Handler) -> None:  # the service crashes: from now on every request is dropped, probes too
    h.server.dead = True
    _drop(h)


def _cut(h: Handler) -> None:  # a reply cut mid-body
    data = json.dumps(GOOD).encode()
    h.send_response(200)
    h.send_header("Content-Length", str(len(data) + 500))
    h.end_headers()
    h.wfile.write(data[:20])
    h.close_connection = True


def _reset(h: Handler) -> None:  # an RST instead of a reply
    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.close_connection = True


def _drip(data: bytes, every_s: float) -> Callable[[Handler], None]:
    def drip(h: Handler) -> None:
        for i in range(len(data)):
            h.wfile.write(data[i:i + 1])
            h.wfile.flush()
            time.sleep(every_s)
        h.close_connection = True
    return drip


def _drip_body(h: Handler) -> None:
    data = json.dumps(GOOD).encode()
    h.send_response(200)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.flush()
    _drip(data, 0.1)(h)


def _slow(h: Handler) -> None:
    time.sleep(h.server.slow_s)
    _fine(h)


def _many_passages(h: Handler) -> None:  # 900 passages of about 400 characters: 380 kB, no field too long
    passage = {"source_id": HOTEL_PAGE, "text": f"{HOTEL}. " + "More of the page. " * 20}
    h.send(200, json.dumps(dict(GOOD, retrieved=[GOOD["retrieved"][0]] + [passage] * 899)).encode())


def _long_passage(h: Handler) -> None:  # one passage of 300,000 characters
    h.send(200, json.dumps(dict(GOOD, retrieved=[*GOOD["retrieved"], {"source_id": HOTEL_PAGE,
                                                                         "text": "z" * 300_000}])).encode())


BEHAVIOURS: dict[str, Callable[[Handler], None]] = {
    "fine": _fine,
    "huge": lambda h: h.stream(200, GIB),  # a 1 GB body
    "endless": lambda h: h.stream(200, None),  # chunked, without end
    "errorhuge": lambda h: h.stream(500, 300 << 20),  # a 300 MB error page
    "gzipbomb": lambda h: h.send(200, h.server.bomb, {"Content-Encoding": "gzip"}),
    "dripbody": _drip_body,  # the body a byte at a time
    "dripheaders": _drip(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 200 + b"\r\n\r\n", 0.1),
    "badutf8": lambda h: h.send(200, json.dumps(GOOD).encode().replace(b"EUR 160", b"EUR \xff\xfe160")),
    "surrogate": lambda h: h.send(200, json.dumps(GOOD).encode().replace(b"EUR 160 per", b"EUR 160 \\ud800 per", 1)),
    "deep": lambda h: h.send(200, b"[" * 100_000 + b"]" * 100_000),
    "brotli": lambda h: h.send(200, b"\x1b\x00\x00", {"Content-Encoding": "br"}),  # an encoding not asked for
    "badgzip": lambda h: h.send(200, b"\x1f\x8b\x08\x00not gzip at all", {"Content-Encoding": "gzip"}),
    "redirect": lambda h: h.send(302, b"", {"Location": "https://elsewhere.example/answer"}),
    "drop": _drop,
    "dies": _dies,
    "cut": _cut,
    "reset": _reset,
    "slow": _slow,
    "manypassages": _many_passages,
    "longpassage": _long_passage,
}


class HostileServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int = 0, *, bomb_bytes: int = 64 << 20, slow_s: float = 60.0,
                 tls: ssl.SSLContext | None = None):
        super().__init__(("127.0.0.1", port), Handler)
        self.scheme = "http"
        if tls is not None:  # HTTPS with the context's certificate
            self.socket = tls.wrap_socket(self.socket, server_side=True)
            self.scheme = "https"
        self.lock = threading.Lock()
        self.seen: dict[str, int] = {}
        self.dead = False  # True: every request is dropped, probes too (a crashed service)
        self.slow_s = slow_s
        self.bomb = gzip_bomb(bomb_bytes)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server_address[1]}/answer"

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client refusing our certificate, or hanging up: what these tests are about

    def __enter__(self) -> HostileServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


def cases_file(path, ids) -> str:
    """A cases file whose cases all ask the hotel question; the case id tells the service what to do."""
    path.write_text("".join(json.dumps({"id": i, "question": "What is the hotel limit per night?",
                                        "evidence": [{"source_id": HOTEL_PAGE}], "facts": ["160"],
                                        "abstain": False}) + "\n" for i in ids))
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    with HostileServer(args.port) as server:
        print(server.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
