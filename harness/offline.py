"""The no-model baseline: BM25 retrieval over the same chunks, and an extractive answerer.

It quotes the best-matching sentence of the top passages, and abstains when no sentence scores at least
`abstain_below`. Its replies go through the same validation as a model's, so its rows mean the same things.
It is a baseline to compare against, not a model: its manifest says so.
"""

from __future__ import annotations

import json

from chatbot.answer import AnswerSettings
from chatbot.index import Hit
from chatbot.ollama_client import ChatReply
from chatbot.text import split_sentences

from chatbot.lexical import LexicalIndex, tokenize
from chatbot.retrievers import LexicalRetriever

__all__ = ["ExtractiveGenerator", "LexicalRetriever", "SYSTEM_NAME"]

SYSTEM_NAME = "offline extractive baseline (BM25 retrieval + best-sentence quote; no language model)"


class ExtractiveGenerator:
    """Answers with the one sentence of the retrieved passages that best matches the question (BM25 over
    their sentences), or abstains when the best score is below the threshold. It ignores the prompt."""

    model = "extractive-baseline"
    digest = ""

    def __init__(self, abstain_below: float):
        self.abstain_below = abstain_below

    def generate(self, prompt: str, settings: AnswerSettings, question: str, hits: list[Hit]) -> ChatReply:
        sentences = [(h.chunk.source_id, s) for h in hits for s in split_sentences(h.chunk.text)]
        reply: dict = {"answer": "", "citations": []}
        if sentences and tokenize(question):
            (best, score), = LexicalIndex([s for _, s in sentences]).search(question, 1)
            if score >= self.abstain_below:
                sid, sentence = sentences[best]
                reply = {"answer": sentence, "citations": [{"source_id": sid, "quote": sentence}]}
        content = json.dumps(reply)
        return ChatReply(content, "", "stop", None, None, None, None, None, None)

