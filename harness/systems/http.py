"""A RAG service over HTTP: POST `{"case_id", "question"}`, JSON reply per system_reply.schema.json."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from pydantic import ValidationError

from ..errors import SystemDown
from ..records import SystemAnswer, SystemReply, field_problem

_RETRIED = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class HttpSystem:
    """Retries 503 and dropped or refused connections (`--retries`, `--backoff`); a server still unreachable
    after them stops the run (it can be resumed). Any other failure is that case's error row. Every call has
    its own deadline (`--timeout`), so the harness does not time it again."""

    kind = "http"
    uses_model_servers = None
    label_checks_chunks = False
    uses_prompt_template = False
    timed_by_harness = False

    def __init__(self, url: str, settings: Any, *, client: httpx.Client | None = None):
        self.url = url
        self.retries, self.backoff_s, self.timeout_s = settings.retries, settings.backoff, settings.timeout
        self.max_reply_chars: int = settings.max_reply_chars
        self._client = client or httpx.Client(timeout=self.timeout_s)

    def describe(self) -> dict[str, Any]:
        return {"name": "http", "system": f"RAG service at {self.url}", "url": self.url,
                "settings": {"timeout_s": self.timeout_s}}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        body, retries = self._post({"case_id": case_id, "question": question})
        usage = {"retries": retries}
        if isinstance(body, str):  # an error to put on the row
            return SystemAnswer(error=body, usage=usage)
        raw = body.text
        if len(raw) > self.max_reply_chars:
            return SystemAnswer(error=f"bad reply from {self.url}: {len(raw)} characters, over --max-reply-chars "
                                      f"{self.max_reply_chars}", raw=raw[:2000], usage=usage)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            return SystemAnswer(error=f"bad reply from {self.url}: not JSON ({exc})", raw=raw[:2000], usage=usage)
        try:
            reply = SystemReply.model_validate(data)
        except ValidationError as exc:
            return SystemAnswer(error=f"bad reply from {self.url}: {field_problem(exc)}", raw=raw[:2000], usage=usage)
        return reply.to_answer(raw).model_copy(update={"usage": usage})

    def _post(self, payload: dict) -> tuple[httpx.Response | str, int]:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._client.post(self.url, json=payload)
            except httpx.TimeoutException:
                return f"no reply from {self.url} within --timeout {self.timeout_s:g} s", attempt
            except _RETRIED as exc:
                if last:
                    raise SystemDown(f"{self.url} is unreachable ({type(exc).__name__}: {exc}); is the service "
                                     "running?") from exc
            else:
                if response.status_code == 200:
                    return response, attempt
                if response.status_code != 503 or last:
                    return f"{self.url} answered HTTP {response.status_code}: {response.text[:300]}", attempt
            time.sleep(self.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt
