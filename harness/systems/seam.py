"""The seam between a system and the harness: what a system returned is checked here, once, before a row is built.

A system we did not write may return anything a Python object can hold: a record built with `model_construct`
(NaN scores, rank 0), `details` of the wrong type, values JSON cannot hold, lone UTF-16 surrogates (legal in
JSON, not encodable as UTF-8). Each becomes that case's error row naming the field, never a stopped run.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError

from ..records import SystemAnswer, field_problem

_SURROGATE = re.compile("[\ud800-\udfff]")

# The `details` a row reads, with the type each must have (see build_row and AnswerRecord).
_DETAILS: dict[str, tuple[str, Any]] = {
    "shown": ("a string", lambda v: isinstance(v, str)),
    "thinking_chars": ("a whole number >= 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "done_reason": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "reasons": ("a list of strings", lambda v: isinstance(v, (list, tuple)) and all(isinstance(r, str) for r in v)),
}


def checked_answer(answer: SystemAnswer) -> SystemAnswer:
    """`answer` when every field can be judged and stored; else an error answer naming the first field that
    cannot (its `usage` kept when that is sound)."""
    problem = answer_problem(answer)
    if problem is None:
        return answer
    usage = answer.usage if unstorable(answer.usage, "usage") is None else {}
    return SystemAnswer(error=f"the system's answer breaks the contract: {problem}", usage=usage)


def answer_problem(answer: SystemAnswer) -> str | None:
    """The first field of `answer` a row cannot hold, as `field: what is wrong`; None when there is none."""
    dumped = answer.model_dump()
    try:  # a record built with model_construct skipped validation: NaN scores, rank 0, wrong types
        SystemAnswer.model_validate(dumped)
    except ValidationError as exc:
        return field_problem(exc)
    for key, (wanted, ok) in _DETAILS.items():
        if key in answer.details and not ok(answer.details[key]):
            return f"details.{key}: {_kind(answer.details[key])}; give {wanted}"
    if answer.error is not None and not answer.error.strip():
        return "error: empty; an error must say what failed (use null when nothing did)"
    return unstorable(dumped, "")


def unstorable(value: Any, where: str) -> str | None:
    """The first part of `value` that JSON in UTF-8 cannot hold (a lone surrogate, a non-finite number, an
    object that is not JSON), as `path: why`; None when all of it can be stored."""
    if isinstance(value, str):
        if value.isascii() or _encodes(value):  # UTF-8 refuses a lone surrogate and nothing else
            return None
        bad = _SURROGATE.search(value)
        return None if bad is None else (f"{where or 'value'}: holds a lone surrogate U+{ord(bad.group()):04X}, "
                                         "which is not text (UTF-8 cannot encode it)")
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where or 'value'}: {value} is not a finite number"
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            if not isinstance(key, str):
                return f"{path}: a key of type {type(key).__name__}; JSON keys are strings"
            problem = unstorable(key, path) or unstorable(item, path)
            if problem:
                return problem
        return None
    if isinstance(value, (list, tuple)):
        return next((p for i, item in enumerate(value) if (p := unstorable(item, f"{where}.{i}"))), None)
    return f"{where or 'value'}: {_kind(value)}, which is not JSON"


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind(value: Any) -> str:
    shown = repr(value)
    return f"a {type(value).__name__} ({shown[:40]}{'…' if len(shown) > 40 else ''})"
