"""A LangChain pipeline as a pdf-rag-eval system: PyPDFLoader pages, a vector store, its retriever, and an LLM
asked for JSON with quoted citations.

    pip install langchain-core langchain-community langchain-ollama
    python evaluate_rag.py --system examples.langchain_system:make_system --label langchain

The part every LangChain adapter needs is `source_id()`: PyPDFLoader puts the file path in `metadata["source"]`
and a **0-based** page in `metadata["page"]`, and the harness names pages `<path relative to --docs>#p<page from
1>`. Without the `+ 1`, every row warns "page numbers look 0-based"; without the relative path (a file name
alone), "no such page". The harness checks both on every row.

`make_system(docs)` uses Ollama through langchain-ollama (the chat and embedding models of the bundled chatbot);
`LangChainRag(docs, embeddings=..., llm=...)` takes any LangChain embeddings and any runnable LLM or chat model.
The tests run it with LangChain's own fake embeddings and a rule-following runnable (tests/support/adapters.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from examples._json_answer import prompt_for, read_reply
from harness import Passage, SystemAnswer


def source_id(metadata: dict[str, Any], docs: str | Path) -> str:
    """The harness's page id of a PyPDFLoader document: path relative to `docs`, page counted from 1."""
    root = Path(docs)
    base = root.parent if root.is_file() else root
    relative = Path(os.path.relpath(metadata["source"], base)).as_posix()
    return f"{relative}#p{int(metadata['page']) + 1}"


class LangChainRag:
    """PyPDFLoader -> InMemoryVectorStore(embeddings) -> top `top_k` pages -> `llm` (JSON answer with quotes)."""

    def __init__(self, docs: str, *, embeddings: Any, llm: Any, top_k: int = 4):
        from langchain_community.document_loaders import PyPDFLoader
        from langchain_core.vectorstores import InMemoryVectorStore

        root = Path(docs)
        files = [root] if root.is_file() else sorted(root.rglob("*.pdf"))
        pages = [page for f in files for page in PyPDFLoader(str(f)).load()]
        self.docs, self.top_k, self.embeddings, self.llm = docs, top_k, embeddings, llm
        self.store = InMemoryVectorStore.from_documents(pages, embeddings)

    def describe(self) -> dict:
        import langchain_core

        return {"name": "langchain example", "version": langchain_core.__version__,
                "settings": {"top_k": self.top_k, "loader": "PyPDFLoader", "store": "InMemoryVectorStore",
                             "embeddings": type(self.embeddings).__name__, "llm": type(self.llm).__name__}}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        hits = self.store.similarity_search_with_score(question, k=self.top_k)
        passages = tuple(Passage(source_id=source_id(doc.metadata, self.docs), text=doc.page_content, rank=rank,
                                 score=float(score)) for rank, (doc, score) in enumerate(hits, start=1))
        reply = self.llm.invoke(prompt_for(question, passages))
        return read_reply(str(getattr(reply, "content", reply)), passages)


def make_system(docs: str = "sample_docs") -> LangChainRag:
    """The pipeline over a local Ollama (langchain-ollama), with the bundled chatbot's models."""
    try:
        from langchain_ollama import ChatOllama, OllamaEmbeddings
    except ImportError as exc:
        raise RuntimeError("this example needs `pip install langchain-core langchain-community "
                           "langchain-ollama`") from exc
    return LangChainRag(docs, embeddings=OllamaEmbeddings(model="nomic-embed-text"),
                        llm=ChatOllama(model="qwen3:4b", temperature=0, format="json"))
