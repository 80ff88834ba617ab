"""Factories for the adapter tier (`pytest -m adapters`): the example adapters with their packages' own fakes.

LangChain: `DeterministicFakeEmbedding` (hashed random vectors: retrieval is arbitrary but repeatable) and a
`RunnableLambda` LLM whose rule is stated here: it cites the first sentence of the first passage in the prompt,
and answers with that sentence. It is not a model."""

from __future__ import annotations

import json
import re

_SOURCE = re.compile(r"\[source: ([^\]]+)\]\n(.+?)(?:\n\n\[source: |\Z)", re.S)


def first_sentence_rule(prompt: object) -> str:
    text = str(getattr(prompt, "text", prompt))
    found = _SOURCE.search(text)
    if not found:
        return json.dumps({"answer": "", "citations": []})
    sentence = re.split(r"(?<=[.!?])\s+", " ".join(found.group(2).split()), maxsplit=1)[0]
    return json.dumps({"answer": sentence, "citations": [{"source_id": found.group(1), "quote": sentence}]})


def langchain_fake(docs: str):
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.runnables import RunnableLambda

    from examples.langchain_system import LangChainRag
    return LangChainRag(docs, embeddings=DeterministicFakeEmbedding(size=128),
                        llm=RunnableLambda(first_sentence_rule))
