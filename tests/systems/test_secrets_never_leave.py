"""Issue #43: an API key and the credentials of a host URL never leave, whatever the server echoes.

A server answering 401 with the Authorization header it got (`Incorrect API key provided: Bearer sk-…`, as OpenAI
does) at the start of a run and in the middle of one; a host given as `http://user:password@host`. Neither
secret may appear in anything printed or in any file of the run folder, its report or its export.
"""

from __future__ import annotations

import base64
import threading
from pathlib import Path

import pytest

from examples.bm25_pages import Bm25Pages
from examples.http_server import serve
from harness.cli import main
from pdfrag.errors import BadReply
from pdfrag.redaction import REDACTED, Redactor, url_secrets, without_userinfo
from tests.conftest import HANDBOOK, sample_cases
from tests.fake_ollama import ECHO

KEY = "sk-proj-Zq7Xv93LmN0pQrStUvWx"
PASSWORD = "hunter2-Pa55w0rd"
ECHOING = f"Incorrect API key provided: {ECHO}. You can find your API key at https://platform.example/account"


def _everything(tmp_path: Path, printed: str) -> str:
    """What was printed and the text of every file under tmp_path (run folder, report, export)."""
    files = [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    return "\n".join([printed, *files])


def _run(server, tmp_path, cases, *extra: str) -> int:
    return main(["run", "--backend", "openai", "--host", server.url + "/v1", "--api-key-env", "TEST_API_KEY",
                 "--docs", str(HANDBOOK), "--cases", str(cases), "--out", str(tmp_path / "results"),
                 "--cache-dir", str(tmp_path / "cache"), *extra])


@pytest.fixture
def cases(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_API_KEY", KEY)
    return sample_cases(tmp_path)


def test_a_401_echoing_the_key_at_the_start_prints_no_key(server, tmp_path, cases, capsys):
    server.fail_next(401, count=10, error=ECHOING)
    assert _run(server, tmp_path, cases) != 0
    printed = capsys.readouterr()
    assert "HTTP 401" in printed.out + printed.err and REDACTED in printed.out + printed.err  # the echo, cut
    assert KEY not in _everything(tmp_path, printed.out + printed.err)
    assert any(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)  # the key was sent


def test_a_401_echoing_the_key_mid_run_leaves_it_in_no_row_report_or_export(server, tmp_path, cases, capsys):
    answer = server.chat_rule

    def first_answer_then_401(body):  # the key expires after the first case: every later chat gets the 401
        if server.count("/v1/chat/completions") > 3:  # the warm-up and three cases answered
            server.fail_next(401, count=100, path="/v1/chat/completions", error=ECHOING)
        return answer(body)

    server.chat_rule = first_answer_then_401
    _run(server, tmp_path, cases)
    [run] = (tmp_path / "results").iterdir()
    rows = (run / "rows.jsonl").read_text()
    assert REDACTED in rows and '"error"' in rows  # an errored row says what the server said, without the key
    assert '"status":"answered"' in rows  # the first cases were answered: the 401 came mid-run
    assert main(["report", str(run)]) == 0
    assert main(["export", str(run), "--csv", str(tmp_path / "rows.csv")]) == 0
    printed = capsys.readouterr()
    assert KEY not in _everything(tmp_path, printed.out + printed.err)


def test_a_password_in_ollama_host_is_in_no_file(server, tmp_path, monkeypatch, capsys):
    host = server.url.replace("http://", f"http://reader:{PASSWORD}@")
    monkeypatch.setenv("OLLAMA_HOST", host)
    answer = server.chat_rule
    server.chat_rule = lambda body: {**answer(body), "answer": f"{answer(body)['answer']} (server {host})"}  # echoed
    assert main(["run", "--docs", str(HANDBOOK), "--cases", str(sample_cases(tmp_path)),
                 "--out", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]) == 0
    printed = capsys.readouterr()
    [run] = (tmp_path / "results").iterdir()
    assert server.url in (run / "manifest.json").read_text()  # the host is stored, without its user info
    assert PASSWORD not in _everything(tmp_path, printed.out + printed.err)
    assert "reader" not in (run / "manifest.json").read_text()
    assert f"(server http://{REDACTED}@" in (run / "rows.jsonl").read_text()  # the echo in the answers, cut


def test_a_password_in_the_host_flag_is_not_stored(server, tmp_path, capsys):
    host = server.url.replace("http://", f"http://reader:{PASSWORD}@")
    assert main(["run", "--host", host, "--docs", str(HANDBOOK), "--cases", str(sample_cases(tmp_path)),
                 "--out", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache")]) == 0
    printed = capsys.readouterr()
    [run] = (tmp_path / "results").iterdir()
    assert server.url in (run / "manifest.json").read_text()
    assert PASSWORD not in _everything(tmp_path, printed.out + printed.err)


@pytest.mark.parametrize("url, shown, secrets", [
    ("http://user:pa%40ss@host:11434/v1", "http://host:11434/v1", ("user:pa%40ss", "pa%40ss", "user:pa@ss", "pa@ss")),
    ("http://token@host", "http://host", ("token",)),
    ("http://host:11434", "http://host:11434", ()),
])
def test_user_info_is_dropped_from_hosts_and_redacted(url, shown, secrets):
    assert without_userinfo(url) == shown and url_secrets(url) == secrets
    said = Redactor(url_secrets(url))(f"no server at {url}; the server said: pa@ss")
    assert not any(secret in said for secret in secrets)
    assert said.count(REDACTED) == (2 if secrets[-1:] == ("pa@ss",) else len(secrets[:1]))


def test_a_redacted_error_keeps_its_type_and_drops_its_cause():
    try:
        try:
            raise ValueError(f"header value Bearer {KEY}")
        except ValueError as inner:
            raise BadReply(f"HTTP 401: Bearer {KEY}", item_index=3) from inner
    except BadReply as exc:
        clean = Redactor([KEY]).exception(exc)
    assert isinstance(clean, BadReply) and str(clean) == f"HTTP 401: Bearer {REDACTED}" and clean.item_index == 3
    assert clean.__cause__ is None and clean.__suppress_context__


def test_a_password_in_an_http_systems_url_is_sent_and_never_stored_or_printed(tmp_path, capsys):
    seen: list[str | None] = []  # the Authorization header each question came with
    server = serve(Bm25Pages(str(HANDBOOK)), 0)
    handler = server.RequestHandlerClass  # a class of this server's own
    post = handler.do_POST

    def noting_post(self):
        seen.append(self.headers.get("Authorization"))
        return post(self)

    handler.do_POST = noting_post
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://reader:{PASSWORD}@127.0.0.1:{server.server_address[1]}/answer"
        assert main(["run", "--system", url, "--docs", str(HANDBOOK), "--cases", str(sample_cases(tmp_path)),
                     "--out", str(tmp_path / "results")]) == 0
    finally:
        server.shutdown()
        server.server_close()
    printed = capsys.readouterr()
    [run] = (tmp_path / "results").iterdir()
    assert f"http://127.0.0.1:{server.server_address[1]}/answer" in (run / "manifest.json").read_text()
    assert PASSWORD not in _everything(tmp_path, printed.out + printed.err)
    assert seen and seen[0] == "Basic " + base64.b64encode(f"reader:{PASSWORD}".encode()).decode()  # it was sent
