"""A scripted judge for tests/fake_ollama.py: a rule, not a model.

It reads the judge prompt (harness/prompts/judge.txt): the numbered claims between `Claims:` and `Passages:`, and
the passages after `Passages:`, each introduced by `[source: ID]` (an optional ` (cited)` after it). For each
claim, in order:
- a claim listed in `script` gets that entry: (verdict, quote), the quote sent as given (it may be invented), with
  the source id of the first passage;
- any other claim is "supported", quoting the passage sentence that shares the most words (\\w+, lower-cased) with
  it, from that passage, when it shares at least 3; else "unsupported" with an empty quote and source id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_SOURCE = re.compile(r"^\[source: (?P<id>[^\]]+)\]")


def parse_judge_prompt(prompt: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(claims, [(source_id, text), ...]) of a judge prompt."""
    claims_part, _, passages_part = prompt.partition("\nPassages:\n")
    claims_text = claims_part.partition("\nClaims:\n")[2]
    claims = [re.sub(r"^\d+\. ", "", line) for line in claims_text.splitlines() if re.match(r"^\d+\. ", line)]
    passages: list[tuple[str, list[str]]] = []
    for line in passages_part.splitlines():
        if m := _SOURCE.match(line):
            passages.append((m["id"], []))
        elif passages:
            passages[-1][1].append(line)
    return claims, [(sid, "\n".join(lines).strip()) for sid, lines in passages]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _overlap(claim: str, passages: list[tuple[str, str]]) -> dict:
    best = (2, "", "")
    for sid, text in passages:
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            score = len(_words(sentence) & _words(claim))
            if score > best[0]:
                best = (score, sid, sentence.strip())
    if not best[2]:
        return {"verdict": "unsupported", "source_id": "", "quote": ""}
    return {"verdict": "supported", "source_id": best[1], "quote": best[2]}


def judge_rule(script: Mapping[str, tuple[str, str]] | None = None):
    """The chat rule (see the module docstring); `script` maps a claim's text to (verdict, quote)."""
    script = dict(script or {})

    def rule(body: dict) -> dict:
        prompt = body["messages"][-1]["content"]
        claims, passages = parse_judge_prompt(prompt)
        verdicts = []
        for number, claim in enumerate(claims, start=1):
            if claim in script:
                verdict, quote = script[claim]
                item = {"verdict": verdict, "source_id": passages[0][0] if passages else "", "quote": quote}
            else:
                item = _overlap(claim, passages)
            verdicts.append({"claim": number, **item})
        return {"verdicts": verdicts}

    return rule


def draft_judge_rule(reject: set[str]):
    """A chat rule for `rag-eval draft judge` prompts (harness/prompts/draft_judge.txt): "rejected" (reason
    "scripted") for a draft whose `Question:` line is in `reject`, else "accepted" (empty reason)."""
    def rule(body: dict) -> dict:
        prompt = body["messages"][-1]["content"]
        question = re.search(r"^Question: (.*)$", prompt, re.MULTILINE).group(1)
        return {"decision": "rejected", "reason": "scripted"} if question in reject else \
            {"decision": "accepted", "reason": ""}
    return rule
