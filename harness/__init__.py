"""Deterministic evaluation of a RAG system against labelled cases, with no LLM judge."""
