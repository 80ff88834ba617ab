"""The answer contract shared by the example adapters: the prompt asking for JSON with quoted citations, and the
reply read back into a SystemAnswer (a reply that is not that JSON is the case's `malformed` reason)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from harness import Citation, Passage, SystemAnswer

PROMPT = """Answer the question from the passages only. Reply with JSON:
{{"answer": "...", "citations": [{{"source_id": "...", "quote": "words copied from that passage"}}]}}
Reply {{"answer": "", "citations": []}} when the passages do not answer it.

Question: {question}

{passages}"""


def prompt_for(question: str, passages: Sequence[Passage]) -> str:
    return PROMPT.format(question=question, passages="\n\n".join(f"[source: {p.source_id}]\n{p.text}"
                                                                   for p in passages))


def read_reply(raw: str, passages: Sequence[Passage]) -> SystemAnswer:
    try:
        data = json.loads(raw)
        citations = tuple(Citation(source_id=c["source_id"], quote=c["quote"]) for c in data["citations"])
        text = str(data["answer"])
    except (ValueError, KeyError, TypeError) as exc:
        return SystemAnswer(retrieved=tuple(passages), raw=raw, malformed=f"reply is not the JSON asked for ({exc})")
    return SystemAnswer(answer=text, retrieved=tuple(passages), citations=citations, raw=raw)
