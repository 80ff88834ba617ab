"""Issue 11, data safety of embeddings: non-finite vectors (1) and badly shaped /api/embed replies (2), through
real HTTP against the test server's embed faults."""

import httpx
import numpy as np
import pytest

from chatbot.answer import AnswerSettings
from chatbot.bot import open_chatbot
from chatbot.index import EmbeddingCache, EmbedSettings, build_index
from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.errors import BadReply
from pdfrag.ollama_client import ClientSettings, OllamaClient, _embeddings
from pdfrag.pdfs import read_documents
from tests.conftest import HANDBOOK

MODEL = "nomic-embed-text"
DIGEST = "d" * 64


def client_for(server) -> OllamaClient:
    return OllamaClient(ClientSettings(host=server.url, backoff_s=0.0))


def build(server, cache):
    return build_index(read_documents(HANDBOOK), client_for(server), chunking=ChunkSettings(),
                       embedding=EmbedSettings(batch_size=4), digest=DIGEST, cache=cache)


def cached_files(root):
    return sorted(root.rglob("*.npy"))


@pytest.mark.parametrize("fault, word", [("nan", "NaN"), ("inf", "Inf")])
def test_non_finite_vectors_are_refused_naming_host_model_and_chunk_and_never_cached(server, tmp_path, fault, word):
    cache = EmbeddingCache(tmp_path / "vectors")
    first_chunk = chunk_pages([p for d in read_documents(HANDBOOK) for p in d.pages], ChunkSettings())[0]
    server.embed_fault = fault  # the first vector of every batch
    with pytest.raises(BadReply) as err:
        build(server, cache)
    message = str(err.value)
    assert f"bad reply from {server.url}: embed with {MODEL}: input 0: " in message and word in message
    assert message.endswith(f"(chunk {first_chunk.source_id})")
    assert cached_files(tmp_path / "vectors") == []  # the refused batch left nothing behind
    server.embed_fault = None
    index = build(server, cache)  # healthy again: everything is embedded, finite
    assert np.isfinite(index.vectors).all() and index.manifest["counts"]["from_cache"] == 0


def test_unusable_cache_entries_are_treated_as_missing_and_rewritten(server, tmp_path):
    cache = EmbeddingCache(tmp_path / "vectors")
    first = build(server, cache)
    files = cached_files(tmp_path / "vectors")
    assert len(files) == len(first.chunks)
    np.save(files[0], np.full(768, np.nan, dtype=np.float32))  # non-finite
    np.save(files[1], np.ones(384, dtype=np.float32))  # the wrong width
    np.save(files[2], np.ones((2, 768), dtype=np.float32))  # not one row
    before = server.count("/api/embed")
    again = build(server, cache)
    assert again.manifest["counts"]["embedded"] == 3 and server.count("/api/embed") > before
    assert np.allclose(again.vectors, first.vectors, atol=1e-6)
    for path in files[:3]:  # rewritten with the good vector
        vector = np.load(path)
        assert vector.shape == (768,) and np.isfinite(vector).all()


def test_cache_refuses_to_store_a_non_finite_vector(tmp_path):
    cache = EmbeddingCache(tmp_path)
    with pytest.raises(ValueError, match="non-finite"):
        cache.put("ab" * 32, np.array([1.0, np.nan], dtype=np.float32))
    assert cached_files(tmp_path) == []


@pytest.mark.parametrize("fault, expected", [
    ("short", "input 0: expected a vector of 768 numbers (as wide as the existing vectors), got 384 numbers"),
    ("uneven", "input 2: expected a vector of 768 numbers (as wide as the first vector), got 767 numbers"),
    ("strings", "input 0: expected numbers, got '\"0.25\"'"),
    ("extra", "expected 3 vectors (one per input), got 4"),
    ("not_json", "the body is not JSON"),
    ("envelope", "expected an object with an 'embeddings' list, got"),
])
def test_badly_shaped_embed_replies_are_one_clear_error(server, fault, expected):
    server.embed_fault = fault
    dim = 768 if fault == "short" else None
    with pytest.raises(BadReply) as err:
        client_for(server).embed(MODEL, ["alpha beta", "gamma delta", "epsilon"], dim=dim)
    assert str(err.value).startswith(f"bad reply from {server.url}: embed with {MODEL}: ")
    assert expected in str(err.value)


def test_nested_lists_are_not_numbers():
    reply = httpx.Response(200, json={"embeddings": [[[0.1, 0.2], [0.3, 0.4]]]})
    with pytest.raises(BadReply, match=r"input 0: expected numbers, got '\[0.1, 0.2\]'"):
        _embeddings(reply, "bad reply", 1, 0, None)


def test_a_later_batch_of_another_width_is_refused(server):
    client = client_for(server)
    server.break_next("short", path="/api/embed")  # the first batch is 384 wide, the second 768
    with pytest.raises(BadReply, match="input 2: expected a vector of 384 numbers .* got 768 numbers"):
        client.embed(MODEL, ["a b", "c d", "e f", "g h"], batch_size=2)


def test_query_vector_of_another_width_than_the_index_is_that_questions_error(server):
    bot = open_chatbot(docs=HANDBOOK, client_settings=ClientSettings(host=server.url, backoff_s=0.0),
                       settings=AnswerSettings())
    server.embed_fault = "short"
    result = bot.ask("What is the hotel reimbursement limit per night?")
    assert result.status == "error" and result.hits == ()
    assert "expected a vector of 768 numbers (as wide as the existing vectors), got 384" in result.error
    server.embed_fault = None
    assert bot.ask("What is the hotel reimbursement limit per night?").status == "answered"


def test_a_saved_index_with_non_finite_vectors_is_refused(server, tmp_path):
    from chatbot.index import Index
    from pdfrag.errors import InputError
    index = build(server, None)
    index.vectors[0, 0] = np.nan  # as an index saved before vectors were checked could be
    index.save(tmp_path / "idx")
    with pytest.raises(InputError, match="not a finite matrix.*rebuild it"):
        Index.load(tmp_path / "idx")
