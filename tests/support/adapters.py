"""Factories for the adapter tier (`pytest -m adapters`): the example adapters with their packages' own fakes.

LangChain: `DeterministicFakeEmbedding` (hashed random vectors: retrieval is arbitrary but repeatable) and a
`RunnableLambda` LLM whose rule is stated here: it cites the first sentence of at least four words of the first
passage in the prompt, and answers with that sentence. LlamaIndex: `MockEmbedding` and a `CustomLLM` with the same
rule. Neither is a model."""

from __future__ import annotations

import json
import re

_SOURCE = re.compile(r"\[source: ([^\]]+)\]\n(.+?)(?:\n\n\[source: |\Z)", re.S)


def first_sentence_rule(prompt: object) -> str:
    text = str(getattr(prompt, "text", prompt))
    found = _SOURCE.search(text)
    if not found:
        return json.dumps({"answer": "", "citations": []})
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(found.group(2).split()))
    sentence = next((s for s in sentences if len(s.split()) >= 4), sentences[0])
    return json.dumps({"answer": sentence, "citations": [{"source_id": found.group(1), "quote": sentence}]})


def langchain_fake(docs: str):
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.runnables import RunnableLambda

    from examples.langchain_system import LangChainRag
    return LangChainRag(docs, embeddings=DeterministicFakeEmbedding(size=128),
                        llm=RunnableLambda(first_sentence_rule))


def llamaindex_fake(docs: str):
    """LlamaIndex's `MockEmbedding` (one constant vector: every node ties) and an LLM following the same rule."""
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    from examples.llamaindex_system import LlamaIndexRag

    class FirstSentence(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="first-sentence rule (test fixture)")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
            return CompletionResponse(text=first_sentence_rule(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
            yield self.complete(prompt)

    return LlamaIndexRag(docs, embed_model=MockEmbedding(embed_dim=32), llm=FirstSentence())
