"""Reading what an OpenAI-compatible server sends back: JSON bodies, error texts, Retry-After, the cause behind
a connection error, embedding items in input order, and numbers that are only taken when they are what they claim
to be. Pure functions over replies; the requests are pdfrag/openai_client.py's."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai

from .bounded_http import BoundsExceeded, NestedTooDeep, json_body
from .errors import BadReply
from .model_server import snippet

MAX_RETRY_AFTER_S = 120.0  # a longer Retry-After is not waited for (openai-python does the same)


def json_object(text: str, where: str) -> dict:
    try:
        data = json_body(text)
    except NestedTooDeep as exc:
        raise BadReply(f"{where}: {exc}") from None
    except ValueError as exc:
        raise BadReply(f"{where}: the body is not JSON ({exc}): {snippet(text)}") from None
    if not isinstance(data, dict):
        raise BadReply(f"{where}: expected a JSON object, got {snippet(text)}")
    return data


def error_text(exc: openai.APIStatusError) -> str:
    """The server's message: openai-python keeps `body["error"]` (a dict, or LM Studio's string) or the body."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        return str(message) if message else json.dumps(body)
    return str(body) if body else exc.message


def retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        seconds = float(str(exc.response.headers.get("retry-after", "")))
    except ValueError:
        return None
    return seconds if 0 <= seconds <= MAX_RETRY_AFTER_S else None


def connection_refused(exc: BaseException) -> bool:
    """Whether a connection error means nothing listens at the address (rather than a dropped connection)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, (httpx2.ConnectError, ConnectionRefusedError)):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def bounds_behind(exc: BaseException) -> BoundsExceeded | None:
    """The reply outside the bounds behind a connection error (openai-python wraps what the transport raised)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, BoundsExceeded):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


INDEXED = "by index"
LISTED = "list order assumed: the server's embedding replies carry no index"


def vectors_in_order(items: list[dict], where: str) -> tuple[list[Any], str]:
    """The vectors in input order: by each item's `index`, which must be a distinct whole number from 0 to n-1 on
    every item; with no index on any item, in list order (and that is said: `LISTED`)."""
    if not any("index" in item for item in items):
        return [item["embedding"] for item in items], LISTED
    indexes = [item.get("index") for item in items]
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in indexes) or \
            sorted(indexes) != list(range(len(items))):  # type: ignore[type-var]
        raise BadReply(f"{where}: every item needs a distinct whole-number index from 0 to {len(items) - 1}, got "
                       f"indexes {snippet(json.dumps(indexes))}; the vectors were not used or cached")
    by_index = {item["index"]: item["embedding"] for item in items}
    return [by_index[i] for i in range(len(items))], INDEXED


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def whole_count(data: dict, name: str) -> int | None:
    value = data.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def finite_number(data: dict, name: str) -> float | None:
    value = data.get(name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    return float(value) if 0 <= value < float("inf") else None
