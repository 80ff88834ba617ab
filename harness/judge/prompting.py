"""What the judge is asked, and how its reply is read: one chat call per answer, all its claims at once.

The prompt template (`harness/prompts/judge.txt`, or `--prompt FILE`) is `string.Template` text with `$question`,
`$answer`, `$claims` (numbered from 1, one a line) and `$passages` (every retrieved passage, best first, each
introduced by `[source: ID]`, marked `(cited)` when the answer cites it). The reply must match `verdicts_schema`:
exactly one verdict per claim, by number, each with a `source_id` and a verbatim `quote`.

Each quote is validated with the answer path's own rules (`pdfrag.citations.check_quote`: a retrieved passage,
at least `min_quote_words` words, found in that passage after normalize(), case folded); a quote longer than the
longest retrieved passage with the id it names (or, naming none, than every retrieved passage) cannot be on it and
fails at once, before any normalising. A "supported" whose quote fails becomes `unverified` (never counted as
supported), the reason kept in the claim's note; another verdict keeps its verdict, the failed quote's reason
noted. What is stored of a claim is bounded (`Claim.bounded`): a 6 MB quote never reaches the reviews file whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pdfrag.asking import PromptTemplate
from pdfrag.citations import check_quote

from ..records import VERDICTS, Row
from ..review.book import Claim

__all__ = ["judge_template", "judge_values", "parse_verdicts", "render_passages", "verdicts_schema"]

_VARIABLES = ("question", "answer", "claims", "passages")


def judge_template(path: str | Path | None = None) -> PromptTemplate:
    """The bundled judge template, or the file at `path`; it must use $question, $answer, $claims and $passages."""
    template = PromptTemplate.read(path) if path is not None else PromptTemplate.bundled("harness", "judge")
    return template.require(_VARIABLES)


def judge_values(row: Row, claims: Sequence[str]) -> dict[str, str]:
    """The template's values for one answer and its claims (numbered from 1, one a line)."""
    numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(claims, start=1))
    return {"question": row.question, "answer": row.answer.model_answer, "claims": numbered,
            "passages": render_passages(row)}


def render_passages(row: Row) -> str:
    cited = {c.source_id for c in row.answer.citations}
    return "\n\n".join(f"[source: {p.source_id}]{' (cited)' if p.source_id in cited else ''}\n{p.text}"
                       for p in sorted(row.retrieved, key=lambda p: p.rank))


def verdicts_schema(claims: int) -> dict:
    """The `format` of a judge call: exactly one verdict per claim."""
    item = {"type": "object",
            "properties": {"claim": {"type": "integer", "minimum": 1, "maximum": claims},
                           "verdict": {"enum": list(VERDICTS)}, "source_id": {"type": "string"},
                           "quote": {"type": "string"}},
            "required": ["claim", "verdict", "source_id", "quote"]}
    return {"type": "object",
            "properties": {"verdicts": {"type": "array", "items": item, "minItems": claims, "maxItems": claims}},
            "required": ["verdicts"]}


def parse_verdicts(reply: dict[str, Any], row: Row, claims: Sequence[str], *,
                   min_quote_words: int) -> tuple[Claim, ...]:
    """The judge's claims from a reply that matched `verdicts_schema`, quotes validated; ValueError when a claim
    is judged twice or not at all (the schema cannot say that)."""
    by_number: dict[int, dict[str, Any]] = {}
    for item in reply["verdicts"]:
        if item["claim"] in by_number:
            raise ValueError(f"malformed output: claim {item['claim']} judged twice")
        by_number[item["claim"]] = item
    missing = [str(n) for n in range(1, len(claims) + 1) if n not in by_number]
    if missing:
        raise ValueError(f"malformed output: claim(s) {', '.join(missing)} not judged")
    passages = [(p.source_id, p.text) for p in row.retrieved]  # several passages may share an id (#19 item 5)
    return tuple(_validated(text, by_number[n], passages, min_quote_words) for n, text in enumerate(claims, start=1))


def _validated(text: str, item: dict[str, Any], passages: list[tuple[str, str]], min_words: int) -> Claim:
    verdict, source_id, quote = item["verdict"], item["source_id"] or None, item["quote"]
    if not quote and verdict != "supported":
        return Claim(text, verdict, source_id, "", quote).bounded()
    reason = (_longer_than_passage(quote, source_id or "", passages)
              or check_quote(source_id or "", quote, passages, min_words=min_words).reason)
    if reason is None:
        return Claim(text, verdict, source_id, "", quote).bounded()
    note = f"quote failed validation: {reason}"
    return Claim(text, "unverified" if verdict == "supported" else verdict, source_id, note, quote).bounded()


def _longer_than_passage(quote: str, source_id: str, passages: list[tuple[str, str]]) -> str | None:
    """Why `quote` cannot be on the passage it names, by length alone (characters as sent), else None."""
    named = [len(text) for sid, text in passages if sid == source_id]
    longest = max(named or [len(text) for _, text in passages] or [0])
    if len(quote) <= longest:
        return None
    what = "the passage it names" if named else "every retrieved passage"
    return f"the quote has {len(quote):,} characters, more than {what} ({longest:,})"
