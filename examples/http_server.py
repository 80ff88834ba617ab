"""A tiny RAG service speaking the harness's HTTP contract, around the bm25_pages example.

    python examples/http_server.py --docs sample_docs --port 8765 &
    python evaluate_rag.py --system http://127.0.0.1:8765/answer

POST /answer with {"case_id", "question"} -> {"answer", "retrieved": [{"source_id", "text", "score"}],
"citations": [{"source_id", "quote"}], "abstained"} (harness/schemas/system_reply.schema.json).
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from examples.bm25_pages import Bm25Pages  # noqa: E402


def serve(system: Bm25Pages, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            result = system.answer(body["question"], case_id=body.get("case_id", ""))
            reply = {"answer": result.answer, "abstained": result.abstained,
                     "retrieved": [{"source_id": p.source_id, "text": p.text, "score": p.score}
                                   for p in result.retrieved],
                     "citations": [{"source_id": c.source_id, "quote": c.quote} for c in result.citations]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", default="sample_docs")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = serve(Bm25Pages(args.docs), args.port)
    print(f"serving http://127.0.0.1:{server.server_address[1]}/answer", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
