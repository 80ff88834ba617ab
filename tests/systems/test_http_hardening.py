"""An HTTP system that floods, drips, drops or fools the harness (issue 19 items 2, 3, 6, 20, 22): each case ends
as that case's row, within `--timeout` per call and under `--max-body-bytes` of memory per call; the run goes on.
Every service here is a real HTTP server on 127.0.0.1 (tests/support/hostile_http.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from harness.evaluate import run_evaluation
from harness.runs import read_rows
from harness.settings import RunSettings
from tests.conftest import REPO, SAMPLE_DOCS
from tests.support.hostile_http import HostileServer, cases_file
from tests.support.memory import peak_rss


@pytest.fixture
def hostile():
    with HostileServer() as server:
        yield server


def _settings(tmp_path, url, ids, **kw) -> RunSettings:
    return RunSettings(**{"docs": str(SAMPLE_DOCS), "cases": cases_file(tmp_path / "cases.jsonl", ids),
                          "out": str(tmp_path / "out"), "system": url, "retries": 0, "backoff": 0.01} | kw)


def _rows(result) -> dict:
    return {r.case_id: r for r in read_rows(result.run_dir)}


def test_huge_endless_compressed_and_dripping_replies_end_within_the_deadline_as_error_rows(tmp_path, hostile):
    ids = ["fine-1", "huge", "endless", "errorhuge", "gzipbomb", "dripbody", "dripheaders", "fine-2"]
    start = time.monotonic()
    result = run_evaluation(_settings(tmp_path, hostile.url, ids, timeout=1.5, max_body_bytes=1_000_000,
                                      workers=2))
    elapsed = time.monotonic() - start
    rows = _rows(result)
    assert list(rows) == ids and result.manifest.status == "complete"
    assert rows["fine-1"].error is None and rows["fine-2"].metrics["passed"] == 1.0
    for case_id in ("huge", "endless", "gzipbomb"):  # a gzip bomb is capped on its decoded bytes
        assert "passed 1,000,000 bytes (decoded), over --max-body-bytes 1000000" in rows[case_id].error, case_id
    assert rows["errorhuge"].error.startswith(f"{hostile.url} answered HTTP 500: xxx")
    assert len(rows["errorhuge"].error) < 400  # the head of the error page, not 300 MB of it
    for case_id in ("dripbody", "dripheaders"):  # each byte on time, the whole far too late
        assert rows[case_id].error == f"no whole reply from {hostile.url} within --timeout 1.5 s", case_id
    assert elapsed < 25, elapsed  # two drips of 1.5 s each, at most; before: 67 s and hanging


def test_peak_memory_of_a_run_against_a_1_gb_body_stays_near_the_cap(tmp_path, hostile):
    """The real command in a process of its own (tests/support/memory.py). Before the cap: 3.2 GB for one call."""
    cap = 4_000_000
    cases = cases_file(tmp_path / "cases.jsonl", ["huge", "fine-1", "huge-2", "huge-3", "huge-4", "gzipbomb"])
    peak = peak_rss([sys.executable, str(REPO / "evaluate_rag.py"), "--system", hostile.url, "--docs",
                     str(SAMPLE_DOCS), "--cases", cases, "--out", str(tmp_path / "out"), "--retries", "0",
                     "--timeout", "20", "--workers", "4", "--max-body-bytes", str(cap)], cwd=REPO)
    assert peak.returncode == 0, peak.stderr[-2000:]
    print(f"peak RSS {peak.mb:.0f} MB")
    assert peak.mb < 400, f"peak RSS {peak.mb:.0f} MB with 4 workers and a {cap / 1e6:.0f} MB cap"


def test_invalid_utf8_is_refused_and_a_json_surrogate_is_an_error_row_not_a_stopped_run(tmp_path, hostile):
    ids = ["badutf8", "surrogate", "fine-1"]
    rows = _rows(run_evaluation(_settings(tmp_path, hostile.url, ids)))
    assert rows["badutf8"].error.startswith(f"bad reply from {hostile.url}: not UTF-8 JSON (invalid start byte")
    assert "\ufffd" not in rows["badutf8"].answer.raw and "\\xff\\xfe" in rows["badutf8"].answer.raw
    assert "answer: holds a lone surrogate U+D800" in rows["surrogate"].error
    assert rows["fine-1"].error is None


def test_a_service_that_drops_one_question_gives_that_case_an_error_row_and_the_run_goes_on(tmp_path, hostile):
    """Dropped without a reply, cut mid-body, reset: retried, then the service is probed; it answers, so each is
    that case's error row (before: the run stopped with "is the service running?", and so did every resume)."""
    ids = ["fine-1", "drop", "cut", "reset", "fine-2"]
    result = run_evaluation(_settings(tmp_path, hostile.url, ids, retries=1, workers=2))
    rows = _rows(result)
    assert list(rows) == ids and result.manifest.status == "complete"
    for case_id in ("drop", "cut", "reset"):
        assert rows[case_id].error.startswith(f"{hostile.url} dropped the connection on this question ("), case_id
        assert rows[case_id].error.endswith("after 1 retries; it answers other requests")
        assert hostile.seen[case_id] == 2  # the first try and one retry
    assert rows["fine-1"].error is None and rows["fine-2"].error is None


def test_a_service_that_answers_nothing_any_more_still_stops_the_run_with_the_resume_command(tmp_path, hostile):
    from harness.evaluate import RunStopped
    settings = _settings(tmp_path, hostile.url, ["fine-1", "dies", "fine-2"])
    with pytest.raises(RunStopped, match="is unreachable .*is the service running?") as stopped:
        run_evaluation(settings)  # "dies": from that request on, every request is dropped, the probe too
    assert "1 of 3 rows are saved" in str(stopped.value) and "rag-eval run --resume" in str(stopped.value)


def test_max_reply_chars_bounds_the_answer_and_each_passage_not_the_whole_body(tmp_path, hostile):
    """900 passages of normal size make a 380 kB body, over --max-reply-chars 200,000 as a whole (before: an error
    row for every such case); the body has its own cap, --max-body-bytes."""
    rows = _rows(run_evaluation(_settings(tmp_path, hostile.url, ["manypassages", "longpassage"])))
    many = rows["manypassages"]
    assert many.error is None and len(many.retrieved) == 900 and many.metrics["hit@1"] == 1.0
    assert len(many.answer.raw) == 200_000  # the raw body is kept to --max-reply-chars, not refused for it
    assert rows["longpassage"].error == ("the system's retrieved.1.text holds 300000 characters, over "
                                         "--max-reply-chars 200000")


def test_http_messages_say_what_happened_redirects_deep_nesting_and_encodings(tmp_path, hostile):
    rows = _rows(run_evaluation(_settings(tmp_path, hostile.url, ["redirect", "deep", "brotli", "badgzip",
                                                                  "fine-1"])))
    assert rows["redirect"].error == (f"{hostile.url} answered HTTP 302, a redirect to "
                                      "'https://elsewhere.example/answer'; give that address as --system")
    assert rows["deep"].error == f"bad reply from {hostile.url}: reply nested too deeply to read as JSON"
    assert rows["brotli"].error == (f"bad reply from {hostile.url}: Content-Encoding 'br' is not decoded here; send "
                                    "gzip, deflate or none")
    assert rows["badgzip"].error.startswith(f"bad reply from {hostile.url}: the gzip body does not decode (")
    assert rows["fine-1"].error is None


def _run_cli(tmp_path, url, *, env=None) -> subprocess.CompletedProcess:
    cases = cases_file(tmp_path / "cases.jsonl", ["fine-1", "fine-2"])
    return subprocess.run([sys.executable, str(REPO / "evaluate_rag.py"), "--system", url, "--docs", str(SAMPLE_DOCS),
                           "--cases", cases, "--out", str(tmp_path / "out"), "--retries", "0", "--timeout", "10"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, env=env)


def test_an_unreachable_service_is_found_before_a_run_directory_is_made(tmp_path):
    import socket
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    out = _run_cli(tmp_path, f"http://127.0.0.1:{port}/answer")
    assert out.returncode == 1
    assert f"error: http://127.0.0.1:{port}/answer is unreachable (ConnectError" in out.stderr
    assert "is the service running?" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())  # no empty incomplete run


def test_a_tls_failure_says_certificate_verify_failed_and_how_to_trust_a_ca(tmp_path):
    import shutil
    import ssl
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with HostileServer(tls=tls, bomb_bytes=1 << 20) as server:
        refused = _run_cli(tmp_path, server.url)
        trusted = _run_cli(tmp_path, server.url, env={**os.environ, "SSL_CERT_FILE": str(cert)})
    assert refused.returncode == 1, refused.stderr
    assert "TLS certificate verify failed (self-signed certificate)" in refused.stderr
    assert "SSL_CERT_FILE=/path/to/ca.pem" in refused.stderr and "is the service running" not in refused.stderr
    assert trusted.returncode == 0, trusted.stderr  # the hint works: the same service, its CA trusted


def test_a_proxy_named_by_the_environment_is_used_with_the_same_bounds(tmp_path, hostile, monkeypatch):
    """HTTP_PROXY points at the local service, which answers a proxied request as if it were the target; the
    target's host does not even resolve. The deadline and the cap hold through the proxy too."""
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{hostile.server_address[1]}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    url = "http://rag-service.invalid/answer"
    result = run_evaluation(_settings(tmp_path, url, ["fine-1", "huge", "dripbody"], timeout=1.5,
                                      max_body_bytes=1_000_000))
    rows = _rows(result)
    assert rows["fine-1"].error is None
    assert "over --max-body-bytes 1000000" in rows["huge"].error
    assert rows["dripbody"].error == f"no whole reply from {url} within --timeout 1.5 s"
