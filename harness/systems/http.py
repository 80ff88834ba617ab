"""A RAG service over HTTP: POST `{"case_id", "question"}`, JSON reply per system_reply.schema.json.

Every call is bounded (pdfrag/bounded_http.py, as every model server's): `--timeout` from connect to last byte, at
most `--max-body-bytes` of decoded body, and no redirect followed, so no reply can hang the run or fill the memory.
"""

from __future__ import annotations

import json
import ssl
import time
from typing import Any

import httpx
from pydantic import ValidationError

from pdfrag.bounded_http import BodyEncoding, BodyTooLarge, BoundedTransport, Bounds, Redirected, read_head
from pdfrag.redaction import without_userinfo

from ..errors import SystemDown
from ..records import SystemAnswer, SystemReply, field_problem
from .traits import HTTP, declares

_RETRIED = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
_SHOWN = 2000  # characters of a bad reply kept on its row


@declares(HTTP)
class HttpSystem:
    """Retries 503 and dropped or refused connections (`--retries`, `--backoff`), then probes the service: if it
    answers others, the case is an error row; if it answers nothing, SystemDown stops the run (it can be resumed).
    A TLS failure stops it at once. Any other failure is that case's error row. Every call has its own deadline
    (`--timeout`, connect to last byte), so the harness does not time it again."""

    def __init__(self, url: str, settings: Any):
        self.url = url  # as given: a `user:password@` in it is sent as the request's Basic authorization
        self.shown = without_userinfo(url)  # as described, in messages and in the manifest
        self.retries, self.backoff_s, self.timeout_s = settings.retries, settings.backoff, settings.timeout
        self.max_body_bytes: int = settings.max_body_bytes
        # verify=True: a TLS context per system, so SSL_CERT_FILE as set when the run starts counts
        self._transport = BoundedTransport(httpx, Bounds(self.timeout_s, self.max_body_bytes), url, verify=True)
        self._http = httpx.Client(transport=self._transport, timeout=self.timeout_s, follow_redirects=False,
                                  trust_env=False)

    @classmethod
    def open(cls, url: str, settings: Any) -> HttpSystem:
        """The system at `url`, once it answers a probe: an unreachable service is found before a run directory
        is made."""
        system = cls(url, settings)
        system.check_reachable()
        return system

    def describe(self) -> dict[str, Any]:
        return {"name": "http", "system": f"RAG service at {self.shown}", "url": self.shown,
                "settings": {"timeout_s": self.timeout_s, "max_body_bytes": self.max_body_bytes}}

    def close(self) -> None:
        """Fail every call in flight now (from any thread) and close the connections."""
        self._transport.abort()
        self._http.close()

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        body, retries = self._post({"case_id": case_id, "question": question})
        usage = {"retries": retries}
        if isinstance(body, str):  # an error to put on the row
            return SystemAnswer(error=body, usage=usage)
        answer = self._parse(body)
        return answer.model_copy(update={"usage": usage})

    def _parse(self, body: bytearray) -> SystemAnswer:
        try:
            raw = body.decode("utf-8")
        except UnicodeDecodeError as exc:  # never decoded with U+FFFD and scored as if the service said that
            return SystemAnswer(error=f"bad reply from {self.shown}: not UTF-8 JSON ({exc.reason} at byte {exc.start})",
                                raw=bytes(body[:_SHOWN]).decode("utf-8", "backslashreplace"))
        try:
            data = json.loads(raw)
        except RecursionError:
            return SystemAnswer(error=f"bad reply from {self.shown}: reply nested too deeply to read as JSON",
                                raw=raw[:_SHOWN])
        except ValueError as exc:
            return SystemAnswer(error=f"bad reply from {self.shown}: not JSON ({exc})", raw=raw[:_SHOWN])
        try:
            reply = SystemReply.model_validate(data)
        except ValidationError as exc:
            return SystemAnswer(error=f"bad reply from {self.shown}: {field_problem(exc)}", raw=raw[:_SHOWN])
        return reply.to_answer(raw)  # the harness checks the answer and each passage against --max-reply-chars

    def _post(self, payload: dict) -> tuple[bytearray | str, int]:
        """The reply's body, or an error for the row, and the retries it took."""
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                with self._http.stream("POST", self.url, json=payload) as response:
                    if response.status_code == 200:
                        return bytearray(response.read()), attempt
                    if response.status_code != 503 or last:
                        return self._status_error(response), attempt
            except httpx.TimeoutException:
                return f"no whole reply from {self.shown} within --timeout {self.timeout_s:g} s", attempt
            except BodyTooLarge as exc:
                return f"bad reply from {self.shown}: {exc}, over --max-body-bytes {self.max_body_bytes}", attempt
            except BodyEncoding as exc:
                return f"bad reply from {self.shown}: {exc}", attempt
            except Redirected as exc:  # not followed: the address to evaluate is the user's to give
                return (f"{self.shown} answered HTTP {exc.status}, a redirect to {exc.location!r}; give that address "
                        "as --system"), attempt
            except _RETRIED as exc:
                if tls_problem(exc) is not None:  # no retry mends a certificate: every case would fail so
                    raise SystemDown(self._unreachable(exc)) from exc
                if last:
                    return self._dropped(exc), attempt
            time.sleep(self.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt

    def _dropped(self, exc: Exception) -> str:
        """The error of a case whose connection dropped after every retry, if the service still answers a probe;
        if it does not, nothing will answer: SystemDown stops the run (it can be resumed)."""
        self.check_reachable()
        return (f"{self.shown} dropped the connection on this question ({type(exc).__name__}: {exc}) after "
                f"{self.retries} retries; it answers other requests")

    def check_reachable(self) -> None:
        """Raise SystemDown, saying why, unless the service answers a cheap request: a GET of its URL, where any
        status from the service itself counts and a proxy's 502/503/504 does not."""
        try:
            with self._http.stream("GET", self.url) as response:
                status = response.status_code
        except Redirected:
            return  # the service answers: the question's own request will say where it redirects
        except httpx.HTTPError as exc:
            raise SystemDown(self._unreachable(exc)) from exc
        if status in (502, 503, 504):
            raise SystemDown(f"{self.shown} answered HTTP {status} to a probe (a proxy with no service behind it?); "
                             "is the service running?")

    def _unreachable(self, exc: Exception) -> str:
        tls = tls_problem(exc)
        if tls is not None:
            return (f"{self.shown}: {tls}; if the service's certificate comes from your own CA, point SSL_CERT_FILE "
                    "at that CA's certificate (PEM): SSL_CERT_FILE=/path/to/ca.pem rag-eval run ...")
        if isinstance(exc, httpx.TimeoutException):
            return f"{self.shown} did not answer a probe within --timeout {self.timeout_s:g} s; is the service running?"
        return f"{self.shown} is unreachable ({type(exc).__name__}: {exc}); is the service running?"

    def _status_error(self, response: httpx.Response) -> str:
        head = read_head(response, 300).decode("utf-8", "backslashreplace")
        return f"{self.shown} answered HTTP {response.status_code}: {head}"


def tls_problem(exc: BaseException) -> str | None:
    """What went wrong with TLS, when that is what `exc` (an httpx error) comes from; else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"TLS certificate verify failed ({seen.verify_message})"
        if isinstance(seen, ssl.SSLError):
            return f"TLS failed ({seen.reason or seen})"
        seen = seen.__cause__ or seen.__context__
    return None
