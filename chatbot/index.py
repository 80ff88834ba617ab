"""The vector index: unit float32 vectors in one numpy matrix plus chunk metadata, and its embedding cache."""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from pdfrag._version import __version__
from pdfrag.chunking import Chunk, ChunkSettings, chunk_pages
from pdfrag.errors import BadReply, InputError, InputTooLong
from pdfrag.model_server import ModelServer
from pdfrag.ollama_client import prefixes_for
from pdfrag.pdfs import Document
from pdfrag.safe_files import (  # noqa: F401 (cache_root, default_cache_dir re-exported)
    UnsafeFile,
    atomic_write_bytes,
    atomic_write_text,
    cache_root,
    default_cache_dir,
    read_bytes,
)
from pdfrag.text import TEXT_RULE
from pdfrag.versions import software_versions

Progress = Callable[[int, int], None]  # (done, total)
INDEX_FORMAT = 1


@dataclass(frozen=True)
class EmbedSettings:
    """Embedding model and the task prefixes put before documents and queries (None = the model's default)."""

    model: str = "nomic-embed-text"
    doc_prefix: str | None = None
    query_prefix: str | None = None
    batch_size: int = 32

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise InputError(f"batch size must be at least 1, got {self.batch_size}")

    @property
    def prefixes(self) -> tuple[str, str]:
        doc, query = prefixes_for(self.model)
        return (doc if self.doc_prefix is None else self.doc_prefix,
                query if self.query_prefix is None else self.query_prefix)


class EmbeddingCache:
    """Content-addressed vectors: key = sha256(model digest, prefix, text). One small .npy file per key."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @staticmethod
    def key(digest: str, prefix: str, text: str) -> str:
        return hashlib.sha256("\0".join((digest, prefix, text)).encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.npy"

    def get(self, key: str) -> np.ndarray | None:
        """The cached vector, or None when it is missing or unusable (damaged, not one finite row): then the
        caller embeds again and `put` overwrites the entry."""
        try:  # its folders are opened without following links: a planted link is never read through
            vector = np.load(io.BytesIO(read_bytes(self._path(key), below=self.root)), allow_pickle=False)
        except (OSError, ValueError, EOFError, UnsafeFile):
            return None
        usable = vector.ndim == 1 and vector.size > 0 and vector.dtype.kind == "f" and np.isfinite(vector).all()
        return vector if usable else None

    def put(self, key: str, vector: np.ndarray) -> None:
        if vector.ndim != 1 or not np.isfinite(vector).all():  # the client refuses these; never cache one anyway
            raise ValueError(f"refusing to cache a vector of shape {vector.shape} with non-finite values")
        data = io.BytesIO()
        np.save(data, vector.astype(np.float32), allow_pickle=False)
        # atomic, and never through a link planted in place of a subfolder (UnsafeFile says so and stops)
        atomic_write_bytes(self._path(key), data.getvalue(), below=self.root)


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk: rank counts from 1; score is the cosine similarity (or a lexical score offline)."""

    rank: int
    score: float
    chunk: Chunk


class Index:
    """Chunks and their unit vectors; exact top-k by one matrix-vector product."""

    def __init__(self, chunks: list[Chunk], vectors: np.ndarray, manifest: dict):
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        self.chunks = chunks
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.manifest = manifest

    def search(self, query: np.ndarray, k: int) -> list[Hit]:
        """The k chunks most similar to a unit query vector, best first; ties go to the earlier chunk."""
        scores = self.vectors @ np.asarray(query, dtype=np.float32)
        return [Hit(rank, float(scores[i]), self.chunks[i]) for rank, i in enumerate(top_k(scores, k), start=1)]

    def save(self, directory: str | Path) -> Path:
        """Write the three files into a fresh folder beside `directory`, then swap it in: a kill at any point
        leaves either the old index or the new one, never a mix."""
        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
        with open(fresh / "vectors.npy", "wb") as fh:
            np.save(fh, self.vectors, allow_pickle=False)
        atomic_write_text(fresh / "chunks.jsonl", "".join(json.dumps(c.to_dict()) + "\n" for c in self.chunks))
        atomic_write_text(fresh / "manifest.json", json.dumps(self.manifest, indent=2) + "\n")
        old = directory.with_name(f".{directory.name}.old-{os.getpid()}")
        if directory.exists():
            os.replace(directory, old)
        os.replace(fresh, directory)
        shutil.rmtree(old, ignore_errors=True)
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> "Index":
        directory = Path(directory)
        try:
            manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
            lines = (directory / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
            vectors = np.load(directory / "vectors.npy", allow_pickle=False)
            if manifest.get("format") != INDEX_FORMAT or "embedding" not in manifest:
                raise ValueError(f"index format {manifest.get('format')!r} is not {INDEX_FORMAT}")
            if manifest.get("text_rule", 1) != TEXT_RULE:  # its chunks were normalised by another rule
                raise ValueError(f"its chunks were normalised by text rule {manifest.get('text_rule', 1)}, "
                                 f"this version uses text rule {TEXT_RULE}")
            if vectors.ndim != 2 or not np.isfinite(vectors).all():  # e.g. NaN vectors saved by an older version
                raise ValueError("its vectors are not a finite matrix")
            return cls([Chunk.from_dict(json.loads(line)) for line in lines if line], vectors, manifest)
        except (OSError, ValueError, EOFError, TypeError, AttributeError) as exc:
            raise InputError(f"{directory}: not a readable index ({exc}); rebuild it with `rag-chat index DOCS`") \
                from exc


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first, ties broken by lower index. O(n) selection + O(k log k)."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    idx = np.arange(n) if k == n else np.argpartition(-scores, k - 1)[:k]
    if k < n:
        # Selection may cut between equal scores; take every index tied with the k-th to keep ties stable.
        kth = scores[idx].min()
        idx = np.concatenate([np.flatnonzero(scores > kth), np.flatnonzero(scores == kth)])
    order = np.lexsort((idx, -scores[idx]))
    return idx[order][:k]


def build_index(documents: list[Document], client: ModelServer, *, chunking: ChunkSettings, embedding: EmbedSettings,
                digest: str, cache: EmbeddingCache | None, progress: Progress | None = None) -> Index:
    """Chunk every page, embed what the cache lacks, and return the index with its manifest.

    `digest` is the embedding model's digest from the server: cached vectors are only reused for the same weights.
    """
    chunks = chunk_pages([p for d in documents for p in d.pages], chunking)
    if not chunks:
        raise InputError("the documents have no extractable text (scanned PDFs need OCR first)")
    doc_prefix, query_prefix = embedding.prefixes
    keys = [EmbeddingCache.key(digest, doc_prefix, c.text) for c in chunks]
    vectors: list[np.ndarray | None] = [cache.get(k) if cache else None for k in keys]
    missing = [i for i, v in enumerate(vectors) if v is None]
    embedded = len(missing)
    width = _embed_into(vectors, missing, chunks, keys, client, embedding, cache, progress, width=None)
    # A cached vector of another width than the server gives now (or, with nothing to embed, than most of the
    # cache) is damaged: treat it as missing and write it again.
    width = width or Counter(len(v) for v in vectors if v is not None).most_common(1)[0][0]
    stale = [i for i, v in enumerate(vectors) if v is not None and len(v) != width]
    if stale:
        embedded += len(stale)
        _embed_into(vectors, stale, chunks, keys, client, embedding, cache, None, width=width)
    matrix = np.vstack([np.asarray(v, dtype=np.float32) for v in vectors])
    manifest = {
        "format": INDEX_FORMAT,
        "text_rule": TEXT_RULE,
        "package_version": __version__,
        "versions": software_versions(),
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "embedding": asdict(embedding) | {"digest": digest, "doc_prefix": doc_prefix, "query_prefix": query_prefix},
        "chunking": chunking.to_dict(),
        "documents": [{"doc_id": d.doc_id, "sha256": d.sha256, "pages": len(d.pages),
                       "empty_pages": list(d.empty_pages)} for d in documents],
        "counts": {"documents": len(documents), "pages": sum(len(d.pages) for d in documents),
                   "chunks": len(chunks), "embedded": embedded, "from_cache": len(chunks) - embedded},
    }
    return Index(chunks, matrix, manifest)


def _embed_into(vectors: list[np.ndarray | None], todo: list[int], chunks: list[Chunk], keys: list[str],
                client: ModelServer, embedding: EmbedSettings, cache: EmbeddingCache | None,
                progress: Progress | None, *, width: int | None) -> int | None:
    """Embed the chunks at `todo` in batches into `vectors` (and the cache); return the vectors' width.
    Errors about one input are re-raised naming its chunk."""
    doc_prefix = embedding.prefixes[0]
    done = len(vectors) - len(todo)
    if progress:
        progress(done, len(vectors))
    for start in range(0, len(todo), embedding.batch_size):
        batch = todo[start:start + embedding.batch_size]
        try:
            fresh = client.embed(embedding.model, [doc_prefix + chunks[i].text for i in batch],
                                 batch_size=embedding.batch_size, dim=width)
        except InputTooLong as exc:
            raise _chunk_refused(exc, chunks[batch[exc.item_index or 0]], embedding.model) from exc
        except BadReply as exc:
            if exc.item_index is None:
                raise
            raise BadReply(f"{exc} (chunk {chunks[batch[exc.item_index]].source_id})",
                           item_index=batch[exc.item_index]) from exc
        width = fresh.shape[1]
        for i, vector in zip(batch, fresh):
            vectors[i] = vector
            if cache:
                cache.put(keys[i], vector)
        done += len(batch)
        if progress:
            progress(done, len(vectors))
    return width


def _chunk_refused(exc: InputTooLong, chunk: Chunk, model: str) -> InputTooLong:
    """The embedding server's refusal of `chunk`: its own words, then what to change on the server (which leaves
    the chunks being evaluated as they are), then in the harness."""
    said = f'"{exc.server_said}"' if exc.server_said else str(exc)
    server = f"on the server, {exc.server_fix}; or " if exc.server_fix else ""
    return InputTooLong(f"chunk {chunk.source_id} ({len(chunk.text):,} characters) was refused by {model} as too "
                        f"long: {said}; {server}lower --chunk-size (smaller chunks change what is evaluated)",
                        server_said=exc.server_said, server_fix=exc.server_fix)


def embed_query(client: ModelServer, embedding: EmbedSettings, question: str, *, dim: int | None = None) -> np.ndarray:
    """The query vector, with the model's query prefix; `dim` is the index's width, checked against the reply."""
    return client.embed(embedding.model, [embedding.prefixes[1] + question], dim=dim)[0]
