"""The Ollama boundary against the test server: exact request bodies, retries, and our error messages."""

import numpy as np
import pytest

from chatbot.index import EmbeddingCache, EmbedSettings, Index, build_index
from pdfrag.chunking import ChunkSettings
from pdfrag.errors import InputTooLong, ModelMissing, ServerBusy, ServerTimeout, ServerUnreachable
from pdfrag.ollama_client import ClientSettings, OllamaClient, preflight, resolve_host
from pdfrag.pdfs import read_documents
from tests.conftest import HANDBOOK


def client_for(server, **kw) -> OllamaClient:
    return OllamaClient(ClientSettings(host=server.url, backoff_s=0.0, **kw))


def test_host_precedence(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://envhost:1234")
    assert resolve_host("http://flag:1") == "http://flag:1"
    assert resolve_host(None) == "http://envhost:1234"
    monkeypatch.delenv("OLLAMA_HOST")
    assert resolve_host(None) == "http://127.0.0.1:11434"


def test_preflight_records_version_digests_and_capabilities(server):
    info = preflight(client_for(server), chat_model="qwen3:4b", embed_model="nomic-embed-text")
    assert info.version == server.version
    embed = info.models["nomic-embed-text"]
    assert len(embed.digest) == 64 and embed.embedding_length == 768 and "embedding" in embed.capabilities
    assert "thinking" in info.models["qwen3:4b"].capabilities


def test_preflight_missing_model_says_ollama_pull(server):
    del server.models["qwen3:4b"]
    with pytest.raises(ModelMissing, match=r"ollama pull qwen3:4b"):
        preflight(client_for(server), chat_model="qwen3:4b", embed_model="nomic-embed-text")


def test_preflight_wrong_role_is_refused(server):
    with pytest.raises(ModelMissing, match="cannot be used for embedding"):
        preflight(client_for(server), chat_model="qwen3:4b", embed_model="qwen3:4b")


def test_server_down_says_ollama_serve(server):
    url = server.url
    server.stop()
    with pytest.raises(ServerUnreachable, match="ollama serve") as err:
        OllamaClient(ClientSettings(host=url)).version()
    assert url in str(err.value)


def test_503_is_retried_with_backoff_then_succeeds(server):
    waits = []
    client = OllamaClient(ClientSettings(host=server.url, retries=3, backoff_s=0.5), sleep=waits.append)
    server.fail_next(503, count=2, path="/api/embed")
    vectors = client.embed("nomic-embed-text", ["hello world"])
    assert vectors.shape == (1, 768) and waits == [0.5, 1.0]
    assert server.count("/api/embed") == 3


def test_503_storm_gives_up_with_a_clear_error(server):
    server.fail_next(503, count=10)
    with pytest.raises(ServerBusy, match="busy"):
        client_for(server, retries=2).version()
    assert server.count("/api/version") == 3


def test_dropped_connection_is_retried(server):
    server.drop_next(1, path="/api/embed")
    assert client_for(server).embed("nomic-embed-text", ["x y"]).shape == (1, 768)
    assert server.count("/api/embed") == 2


def test_timeout_is_our_error(server):
    server.delay_s = 1.0
    with pytest.raises(ServerTimeout, match="raise --timeout"):
        client_for(server, timeout_s=0.2).embed("nomic-embed-text", ["slow"])


def test_embed_request_bodies_batches_and_prefixes(server):
    docs = read_documents(HANDBOOK)
    client = client_for(server)
    index = build_index(docs, client, chunking=ChunkSettings(600, 50), embedding=EmbedSettings(batch_size=4),
                        digest="d" * 64, cache=None)
    bodies = server.bodies("/api/embed")
    n = len(index.chunks)
    assert [len(b["input"]) for b in bodies] == [4] * (n // 4) + ([n % 4] if n % 4 else [])
    for body in bodies:
        assert body["model"] == "nomic-embed-text" and body["truncate"] is False
        assert all(text.startswith("search_document: ") for text in body["input"])
    assert bodies[0]["input"][0] == "search_document: " + index.chunks[0].text
    assert np.allclose(np.linalg.norm(index.vectors, axis=1), 1.0, atol=1e-5)


def test_prefix_override_and_query_prefix(server):
    client = client_for(server)
    from chatbot.index import embed_query
    embed_query(client, EmbedSettings(), "hotel limit")
    embed_query(client, EmbedSettings(query_prefix="query: "), "hotel limit")
    assert [b["input"] for b in server.bodies("/api/embed")] == [["search_query: hotel limit"],
                                                                  ["query: hotel limit"]]


def test_over_long_chunk_is_named_not_truncated(server, make_pdf):
    server.models["nomic-embed-text:latest"].context_length = 50
    path = make_pdf("long.pdf", ["short page", " ".join(["word"] * 120)])
    with pytest.raises(InputTooLong, match=r"chunk long.pdf#p2 \(\d+ characters\) was refused") as err:
        build_index(read_documents(path), client_for(server), chunking=ChunkSettings(2000, 0),
                    embedding=EmbedSettings(), digest="d" * 64, cache=None)
    message = str(err.value)  # the server's words, then the server's fix, then the harness's
    assert f'"{err.value.server_said}"' in message and "exceeds the context length" in err.value.server_said
    assert message.index("OLLAMA_CONTEXT_LENGTH") < message.index("--chunk-size")


def test_cache_makes_a_rebuild_embed_nothing(server, tmp_path):
    docs = read_documents(HANDBOOK)
    cache = EmbeddingCache(tmp_path / "cache")
    kw = dict(chunking=ChunkSettings(), embedding=EmbedSettings(), digest="a" * 64, cache=cache)
    first = build_index(docs, client_for(server), **kw)
    calls = server.count("/api/embed")
    second = build_index(docs, client_for(server), **kw)
    assert calls >= 1 and server.count("/api/embed") == calls  # no new request
    assert second.manifest["counts"]["from_cache"] == len(second.chunks)
    assert np.array_equal(first.vectors, second.vectors)
    build_index(docs, client_for(server), **{**kw, "digest": "b" * 64})  # new weights: embedded again
    assert server.count("/api/embed") > calls


def test_index_search_save_and_load(server, tmp_path):
    client = client_for(server)
    index = build_index(read_documents(HANDBOOK), client, chunking=ChunkSettings(), embedding=EmbedSettings(),
                        digest="a" * 64, cache=None)
    from chatbot.index import embed_query
    query = embed_query(client, EmbedSettings(), "hotel costs reimbursed per night")
    hits = index.search(query, 2)
    assert [h.rank for h in hits] == [1, 2] and hits[0].score >= hits[1].score
    assert hits[0].chunk.page_id == "handbook.pdf#p2"
    loaded = Index.load(index.save(tmp_path / "idx"))
    assert [h.chunk for h in loaded.search(query, 2)] == [h.chunk for h in hits]
    assert loaded.manifest["embedding"]["digest"] == "a" * 64


def test_damaged_index_is_a_clear_error(server, tmp_path):
    from pdfrag.errors import InputError
    index = build_index(read_documents(HANDBOOK), client_for(server), chunking=ChunkSettings(),
                        embedding=EmbedSettings(), digest="a" * 64, cache=None)
    saved = index.save(tmp_path / "idx")
    index.save(saved)  # saving over an existing index swaps it whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    (saved / "chunks.jsonl").write_text((saved / "chunks.jsonl").read_text().split("\n", 1)[1])
    with pytest.raises(InputError, match="not a readable index .*4 vectors"):
        Index.load(saved)

