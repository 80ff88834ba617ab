"""Systems as plug-ins: `--system module:factory`, `--system http://…`, entry points, and what the harness
does when a foreign system misbehaves. Every HTTP test talks to a real server on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from examples.bm25_pages import Bm25Pages
from examples.http_server import serve
from harness.errors import RunStopped
from harness.evaluate import run_evaluation
from harness.records import SystemAnswer
from harness.report.compare import compare_runs
from harness.rows import validate_row
from harness.runs import read_manifest, read_rows
from harness.settings import RunSettings
from harness.systems import SystemContext, load_system
from pdfrag.errors import InputError
from tests.conftest import REPO, SAMPLE_DOCS, sample_cases

HOTEL_PAGE = "handbook.pdf#p2"


def _settings(tmp_path, system, **kw) -> RunSettings:
    return RunSettings(**{"docs": str(SAMPLE_DOCS), "cases": sample_cases(tmp_path), "out": str(tmp_path / "out"),
                          "system": system, "retries": 0, "backoff": 0.01} | kw)


def _rows_json(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "rows.jsonl").read_text().splitlines()]


@pytest.fixture
def example_server():
    server = serve(Bm25Pages(str(SAMPLE_DOCS)), 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/answer"
    server.shutdown()
    server.server_close()


def test_python_factory_from_the_command_line_writes_schema_valid_rows(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "evaluate_rag.py"), "--system", "examples.bm25_pages:make_system",
                          "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "out")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    run_dir = next((tmp_path / "out").iterdir())
    rows = _rows_json(run_dir)
    assert len(rows) == 21
    for row in rows:
        validate_row(row)
    manifest = read_manifest(run_dir)
    assert manifest.system.name == "bm25-pages example" and manifest.collection.chunks is None
    assert "prompt_template" not in manifest.to_json()  # the example uses no prompt of ours
    hotel = next(r for r in rows if r["case_id"] == "hotel-limit")
    # The harness, not the system, says where the evidence page was retrieved and whether the quote is real.
    assert hotel["retrieved"][0]["page_id"] == HOTEL_PAGE and hotel["metrics"]["hit@1"] == 1.0
    assert hotel["answer"]["citations"][0]["valid"] is True


def test_http_system_rows_and_compare_with_another_system(tmp_path, example_server):
    http_run = run_evaluation(_settings(tmp_path, example_server, label="http"))
    offline_run = run_evaluation(_settings(tmp_path, "offline", label="offline"))
    for row in _rows_json(http_run.run_dir):
        validate_row(row)
        assert row["error"] is None and row["warnings"] == []
    comparison = compare_runs(offline_run.run_dir, http_run.run_dir)
    assert comparison.cases == 21
    names = [m.metric for m in comparison.metrics]
    assert "passed" in names and "hit@1" in names
    assert any(key.startswith("system.") for key, _, _ in comparison.manifest_diff)


def test_chatbot_run_compares_with_an_http_run(server, tmp_path, example_server):
    # server: the Ollama-compatible test server; its chat rule (overlap_rule) quotes the passage sentence sharing
    # most words with the question. Not a model.
    chatbot_run = run_evaluation(_settings(tmp_path, "chatbot", host=server.url, label="chatbot"))
    http_run = run_evaluation(_settings(tmp_path, example_server, label="http"))
    comparison = compare_runs(chatbot_run.run_dir, http_run.run_dir)
    assert comparison.cases == 21 and comparison.metrics


class _Faulty(BaseHTTPRequestHandler):
    """Answers by the case id: each id names one way to break the contract."""

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        case_id = body["case_id"]
        good = {"answer": "EUR 160 per night", "abstained": False,
                "retrieved": [{"source_id": HOTEL_PAGE, "text": "Hotel costs are reimbursed up to EUR 160 per night"}],
                "citations": [{"source_id": HOTEL_PAGE, "quote": "reimbursed up to EUR 160 per night"}]}
        if case_id == "unknown-page":
            good["retrieved"][0]["source_id"] = "handbook.pdf#p9"
            good["citations"][0]["source_id"] = "handbook.pdf#p9"
        elif case_id == "zero-based":  # the hotel text, named by a 0-based loader as page 1
            good["retrieved"][0]["source_id"] = "handbook.pdf#p1"
            good["citations"][0]["source_id"] = "handbook.pdf#p1"
        elif case_id == "not-json":
            return self._send(200, b"<html>oops</html>")
        elif case_id == "wrong-types":
            good["retrieved"] = "handbook.pdf#p2"
        elif case_id == "slow":
            time.sleep(1.5)
        elif case_id == "server-error":
            return self._send(500, b"internal error")
        elif case_id == "nan-score":  # Python's json writes NaN, which is not JSON; a careless service sends it
            return self._send(200, json.dumps(good | {"retrieved": [good["retrieved"][0] | {"score": float("nan")}]})
                              .encode())
        elif case_id == "huge":
            good["answer"] = "x" * 300_000
        self._send(200, json.dumps(good).encode())

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _cases_file(tmp_path, ids) -> str:
    path = tmp_path / "faulty-cases.jsonl"
    path.write_text("".join(json.dumps({"id": i, "question": "What is the hotel limit per night?",
                                        "evidence": [{"source_id": HOTEL_PAGE}], "facts": ["160"],
                                        "abstain": False}) + "\n" for i in ids))
    return str(path)


@pytest.fixture
def faulty():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Faulty)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_misbehaving_http_system_gets_error_rows_and_warnings_and_the_run_goes_on(tmp_path, faulty):
    url = f"http://127.0.0.1:{faulty.server_address[1]}/"
    ids = ["fine", "unknown-page", "zero-based", "not-json", "wrong-types", "slow", "server-error", "nan-score", "huge"]
    result = run_evaluation(_settings(tmp_path, url, cases=_cases_file(tmp_path, ids), timeout=0.5))
    rows = {r.case_id: r for r in read_rows(result.run_dir)}
    assert list(rows) == ids
    assert rows["fine"].answer.status == "answered" and rows["fine"].metrics["passed"] == 1.0
    assert rows["fine"].warnings == ()
    assert "no such page" in rows["unknown-page"].warnings[0]
    assert rows["unknown-page"].metrics["hit@1"] == 0.0
    assert "does not occur on that page" in rows["zero-based"].warnings[0]
    assert "it is on handbook.pdf#p2 (0-based page numbers?)" in rows["zero-based"].warnings[0]
    assert "not JSON" in rows["not-json"].error
    assert "retrieved" in rows["wrong-types"].error and "bad reply" in rows["wrong-types"].error
    assert "within --timeout" in rows["slow"].error
    assert "HTTP 500" in rows["server-error"].error
    assert "retrieved.0.score" in rows["nan-score"].error  # nothing non-finite reaches rows.jsonl
    assert "over --max-reply-chars" in rows["huge"].error and len(rows["huge"].answer.raw) <= 2000
    assert result.summary.errored == 6


def test_a_dying_http_system_stops_the_run_and_resume_finishes_it(tmp_path):
    """The service answers three cases, then drops every connection without a reply (as a crashed process
    behind a proxy does) until the test revives it. Deciding inside the handler, not by shutting the server
    down from another thread, keeps the cut at exactly the fourth request."""
    state = {"count": 0, "alive_for": 3}

    class Dying(_Faulty):
        def do_POST(self) -> None:  # noqa: N802
            state["count"] += 1
            if state["count"] > state["alive_for"]:
                self.close_connection = True  # no status line, no body: httpx sees RemoteProtocolError
                return
            super().do_POST()

        def do_GET(self) -> None:  # noqa: N802 - the harness's probe: a dead service drops it too
            self.close_connection = state["count"] > state["alive_for"]
            if not self.close_connection:
                self._send(405, b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Dying)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ids = [f"fine-{i}" for i in range(6)]
    settings = _settings(tmp_path, f"http://127.0.0.1:{server.server_address[1]}/", cases=_cases_file(tmp_path, ids))
    try:
        with pytest.raises(RunStopped, match="rag-eval run --resume") as stopped:
            run_evaluation(settings)
        run_dir = stopped.value.run_dir
        assert [r.case_id for r in read_rows(run_dir)] == ids[:3]
        assert read_manifest(run_dir).status == "incomplete"
        state["alive_for"] = 10**9
        result = run_evaluation(settings, resume=run_dir)
    finally:
        server.shutdown()
        server.server_close()
    assert [r.case_id for r in read_rows(result.run_dir)] == ids
    assert result.manifest.status == "complete"


class _Raising:
    """A Python system that fails in three ways, by case id; every other case abstains."""

    def describe(self) -> dict:
        return {"name": "raising"}

    def answer(self, question: str, *, case_id: str):
        if case_id == "hotel-limit":
            raise RuntimeError("index not loaded")
        if case_id == "leave-days":
            return {"answer": "x", "retrieved": [{"source_id": 3}]}  # wrong type in the contract
        if case_id == "mileage-rate":
            time.sleep(0.3)  # over --timeout 0.2
        return SystemAnswer(answer="", abstained=True)


def test_python_system_failures_are_that_cases_error_rows(tmp_path):
    result = run_evaluation(_settings(tmp_path, "raising:factory", timeout=0.2), system=_Raising())
    rows = {r.case_id: r for r in read_rows(result.run_dir)}
    assert len(rows) == 21
    assert rows["hotel-limit"].error == "the system raised RuntimeError: index not loaded"
    assert "breaks the contract" in rows["leave-days"].error and "retrieved.0.source_id" in rows["leave-days"].error
    assert "over --timeout 0.2 s" in rows["mileage-rate"].error
    assert rows["mileage-rate"].usage["elapsed_ms"] >= 300
    assert {r.case_id for r in rows.values() if r.error} == {"hotel-limit", "leave-days", "mileage-rate"}


def test_unknown_or_broken_system_specs_say_what_to_do(tmp_path):
    ctx = SystemContext(_settings(tmp_path, "x"), [])
    with pytest.raises(InputError, match="unknown system"):
        load_system("no-such-system", ctx)
    with pytest.raises(InputError, match="cannot import"):
        load_system("no_such_module_xyz:make", ctx)
    with pytest.raises(InputError, match="no callable 'nope'"):
        load_system("examples.bm25_pages:nope", ctx)
    with pytest.raises(InputError, match="has no describe"):
        load_system("collections:OrderedDict", ctx)  # a factory whose object has neither method


def test_entry_point_plugins_are_found_by_name(tmp_path, monkeypatch):
    dist = tmp_path / "site" / "myrag_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myrag-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pdf_rag_eval.systems]\nmyrag = examples.bm25_pages:make_system\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    system = load_system("myrag", SystemContext(_settings(tmp_path, "myrag"), []))
    assert system.describe()["name"] == "bm25-pages example"


def test_a_factory_that_raises_is_named(tmp_path):
    ctx = SystemContext(_settings(tmp_path, "x"), [])
    raised = r"'tests.support.sysfixtures:broken_factory': the factory raised RuntimeError"
    with pytest.raises(InputError, match=raised):
        load_system("tests.support.sysfixtures:broken_factory", ctx)
