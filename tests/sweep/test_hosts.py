"""Several servers as one pool, against two test servers: preflight, digest check, spreading and order."""

from __future__ import annotations

import threading

import pytest

from pdfrag.errors import InputError, ModelMissing
from pdfrag.hosts import HostPool
from pdfrag.ollama_client import ClientSettings, OllamaClient
from tests.fake_ollama import FakeOllama

CHAT = "qwen3:4b"
EMBED = "nomic-embed-text"


@pytest.fixture
def two_servers():
    a, b = FakeOllama(port=0).start(), FakeOllama(port=0).start()
    # each server signs its answers, so a test can tell who really answered an item
    a.chat_rule = lambda body: "A:" + body["messages"][-1]["content"]
    b.chat_rule = lambda body: "B:" + body["messages"][-1]["content"]
    yield a, b
    a.stop()
    b.stop()


def ask(client: OllamaClient, item: str) -> str:
    reply = client.chat(CHAT, [{"role": "user", "content": item}], format=None, options={}, think=False)
    return reply.content


def test_work_spreads_over_both_servers_and_comes_back_in_order(two_servers):
    a, b = two_servers
    for server in (a, b):
        server.delay_s, server.slots = 0.05, 2
    pool = HostPool.connect([a.url, b.url], slots=2)
    items = [f"case-{i}" for i in range(12)]
    served = pool.map(ask, items)
    assert [s.value.split(":", 1)[1] for s in served] == items  # input order, every item once
    by_letter = {a.url: "A", b.url: "B"}
    assert all(s.value.startswith(by_letter[s.host] + ":") for s in served)  # the recorded host answered it
    assert len(a.chat_bodies()) + len(b.chat_bodies()) == 12
    assert len(a.chat_bodies()) >= 3 and len(b.chat_bodies()) >= 3
    assert a.peak_chat_in_flight == b.peak_chat_in_flight == 2  # each server used its own slots
    assert pool.total_slots == 4 and pool.hosts == (a.url, b.url)


def test_uneven_slots_give_the_bigger_server_more_items(two_servers):
    a, b = two_servers
    a.delay_s = b.delay_s = 0.05
    pool = HostPool.connect([a.url, b.url], slots=[3, 1])
    pool.map(ask, [str(i) for i in range(16)])
    assert len(a.chat_bodies()) > len(b.chat_bodies()) >= 1
    assert (a.peak_chat_in_flight, b.peak_chat_in_flight) == (3, 1)


def test_preflight_passes_with_the_same_builds_and_warns_on_versions(two_servers):
    a, b = two_servers
    b.version = "0.13.0"
    info = HostPool.connect([a.url, b.url]).preflight(chat_model=CHAT, embed_model=EMBED)
    assert [s.host for s in info.servers] == [a.url, b.url]
    assert info.servers[0].models[CHAT].digest == info.servers[1].models[CHAT].digest
    assert len(info.warnings) == 1 and "0.12.6" in info.warnings[0] and "0.13.0" in info.warnings[0]
    assert info.to_dict()["servers"][1]["version"] == "0.13.0"


def test_a_different_model_digest_is_refused_naming_both_hosts(two_servers):
    a, b = two_servers
    b.models[CHAT].digest = "f" * 64  # another build of qwen3:4b on the second server
    pool = HostPool.connect([a.url, b.url])
    with pytest.raises(InputError) as info:
        pool.preflight(chat_model=CHAT, embed_model=EMBED)
    message = str(info.value)
    assert f"'{CHAT}' differs between servers" in message
    assert a.url in message and b.url in message
    assert "f" * 12 in message
    a_digest = OllamaClient(ClientSettings(host=a.url)).list_models()[CHAT]
    assert a_digest[:12] in message
    assert "nomic" not in message  # the embedding model is the same build on both
    assert len(b.chat_bodies()) == 0 and len(a.chat_bodies()) == 0


def test_a_server_without_the_model_is_named(two_servers):
    a, b = two_servers
    del b.models[CHAT]
    with pytest.raises(ModelMissing, match=b.url.replace(".", r"\.")):
        HostPool.connect([a.url, b.url]).preflight(chat_model=CHAT, embed_model=EMBED)


def test_first_failure_in_input_order_is_raised_and_stops_new_work(two_servers):
    a, b = two_servers
    started: list[int] = []
    lock = threading.Lock()

    def work(client: OllamaClient, item: int) -> int:
        with lock:
            started.append(item)
        if item == 3:
            raise ValueError("item 3 broke")
        return item * 10

    pool = HostPool.connect([a.url, b.url], slots=1)
    results = pool.imap(work, list(range(50)))
    assert [next(results).value for _ in range(3)] == [0, 10, 20]
    with pytest.raises(ValueError, match="item 3 broke"):
        next(results)
    assert len(started) < 50  # no new item after the failure
    assert pool.map(ask, []) == []


def test_stopping_early_starts_no_more_work(two_servers):
    a, b = two_servers
    a.delay_s = b.delay_s = 0.02
    pool = HostPool.connect([a.url, b.url], slots=1)
    results = pool.imap(ask, [str(i) for i in range(40)])
    next(results)
    results.close()  # the caller stops (e.g. Ctrl-C while writing rows)
    assert len(a.chat_bodies()) + len(b.chat_bodies()) < 10


@pytest.mark.parametrize("hosts, slots, message", [
    (["http://127.0.0.1:1", "http://127.0.0.1:1/"], 1, r"given more than once"),
    (["http://127.0.0.1:1"], 0, r"at least one worker slot"),
    (["http://127.0.0.1:1", "http://127.0.0.1:2"], [1], r"at least one worker slot"),
])
def test_bad_pools_are_refused(hosts, slots, message):
    with pytest.raises(InputError, match=message):
        HostPool.connect(hosts, slots=slots)


def test_no_host_means_the_environment_or_default(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    assert HostPool.connect([]).hosts == ("http://127.0.0.1:9",)
    assert HostPool.connect([None, "http://127.0.0.1:8"]).hosts == ("http://127.0.0.1:9", "http://127.0.0.1:8")
