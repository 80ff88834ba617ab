"""A LlamaIndex pipeline as a pdf-rag-eval system: PDFReader pages, a VectorStoreIndex, its retriever, and an
LLM asked for JSON with quoted citations.

    pip install llama-index-core llama-index-readers-file llama-index-llms-ollama llama-index-embeddings-ollama
    python evaluate_rag.py --system examples.llamaindex_system:make_system --label llamaindex

LlamaIndex core alone reads a PDF as bytes; `llama-index-readers-file` gives one document per page, with
`file_name` (no folder) and `page_label` (the label printed on the page, not always its position) in metadata.
Neither is the harness's page id, `<path relative to --docs>#p<page from 1>`, so this adapter reads each file
itself and stores that id in every page's metadata before indexing: every node split from a page keeps it.
Note: installing `llama-index-readers-file` may install another pypdf than the harness's (it downgraded 7.1.1 to
6.21.4 here): keep it in an environment of its own, or re-run `rag-eval check`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from examples._json_answer import prompt_for, read_reply
from harness import Passage, SystemAnswer

ID_KEY = "pdf_rag_eval_source_id"


def page_ids(path: Path, docs: str | Path, pages: int) -> list[str]:
    """The harness's ids of a file's pages, in reading order (PDFReader yields one document per page)."""
    root = Path(docs)
    base = root.parent if root.is_file() else root
    relative = Path(os.path.relpath(path, base)).as_posix()
    return [f"{relative}#p{n}" for n in range(1, pages + 1)]


class LlamaIndexRag:
    """PDFReader pages (ids set) -> VectorStoreIndex(embed_model) -> top `top_k` nodes -> `llm` (JSON answer)."""

    def __init__(self, docs: str, *, embed_model: Any, llm: Any, top_k: int = 4):
        from llama_index.core import VectorStoreIndex
        from llama_index.readers.file import PDFReader

        root = Path(docs)
        pages = []
        for path in [root] if root.is_file() else sorted(root.rglob("*.pdf")):
            read = PDFReader().load_data(file=path)
            for page, page_id in zip(read, page_ids(path, docs, len(read))):
                page.metadata[ID_KEY] = page_id
                page.excluded_embed_metadata_keys.append(ID_KEY)
                page.excluded_llm_metadata_keys.append(ID_KEY)
                pages.append(page)
        self.top_k, self.embed_model, self.llm = top_k, embed_model, llm
        self.retriever = VectorStoreIndex.from_documents(pages, embed_model=embed_model).as_retriever(
            similarity_top_k=top_k)

    def describe(self) -> dict:
        from llama_index.core import __version__

        return {"name": "llamaindex example", "version": __version__,
                "settings": {"top_k": self.top_k, "loader": "PDFReader", "index": "VectorStoreIndex",
                             "embed_model": type(self.embed_model).__name__, "llm": type(self.llm).__name__}}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        nodes = self.retriever.retrieve(question)
        passages = tuple(Passage(source_id=n.node.metadata[ID_KEY], text=n.node.get_content(), rank=rank,
                                 score=None if n.score is None else float(n.score))
                         for rank, n in enumerate(nodes, start=1))
        return read_reply(str(self.llm.complete(prompt_for(question, passages)).text), passages)


def make_system(docs: str = "sample_docs") -> LlamaIndexRag:
    """The pipeline over a local Ollama, with the bundled chatbot's models."""
    try:
        from llama_index.embeddings.ollama import OllamaEmbedding
        from llama_index.llms.ollama import Ollama
    except ImportError as exc:
        raise RuntimeError("this example needs `pip install llama-index-core llama-index-readers-file "
                           "llama-index-llms-ollama llama-index-embeddings-ollama`") from exc
    return LlamaIndexRag(docs, embed_model=OllamaEmbedding(model_name="nomic-embed-text"),
                         llm=Ollama(model="qwen3:4b", temperature=0, json_mode=True, request_timeout=600))
