"""What drafting asks the chat model: three prompts (harness/prompts/) and the schema each reply must match.

`draft.txt` (one call per page: a list of drafts), `parametric.txt` (the question alone, no page),
`unanswerable.txt` (one call per unanswerable draft). Each goes out through `pdfrag.asking.Asker` as one chat call
with its JSON Schema as the format, temperature 0 and a fixed seed. Replies that parse and match the schema are
kept in `pdfrag.asking.ParsedReplies` (keyed by model digest, prompt template SHA-256, SHA-256 of the rendered
prompt, request options and schema): a rerun over unchanged pages makes no chat call. Failures are not kept, so a
rerun tries them again.
"""

from __future__ import annotations

from .records import TYPES


def drafts_schema(per_page: int) -> dict:
    """The `format` of a page call: exactly `per_page` drafts of {question, quote, facts, type}."""
    item = {"type": "object",
            "properties": {"question": {"type": "string"}, "quote": {"type": "string"},
                           "facts": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                           "type": {"enum": [t for t in TYPES if t != "unanswerable"]}},
            "required": ["question", "quote", "facts", "type"]}
    return {"type": "object",
            "properties": {"drafts": {"type": "array", "items": item, "minItems": 1, "maxItems": per_page}},
            "required": ["drafts"]}


PARAMETRIC_SCHEMA: dict = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
UNANSWERABLE_SCHEMA: dict = {"type": "object",
                             "properties": {"question": {"type": "string"}, "original": {"type": "string"},
                                            "changed": {"type": "string"}},
                             "required": ["question", "original", "changed"]}
