"""Several model servers as one pool: preflight all of them, refuse different model builds, spread the work.

Each server gets `slots` worker threads (set it to the server's OLLAMA_NUM_PARALLEL). Workers take the next
item in input order as soon as they are free, so a faster or less busy server takes more items; results come
back in input order, each with the host that served it. This is for a handful of servers on a local network;
beyond that, serve the model with an engine built for it (e.g. vLLM) behind one address.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from .backends import connect, resolve_address
from .errors import InputError
from .model_server import ClientSettings, ModelServer, ServerInfo, load_chat_model, preflight

__all__ = ["HostPool", "PoolInfo", "Served"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Served(Generic[R]):
    """One item's result and the server that produced it."""

    value: R
    host: str


@dataclass(frozen=True)
class PoolInfo:
    """What the pool's preflight found: one ServerInfo per host (in pool order), and warnings for the user."""

    servers: tuple[ServerInfo, ...]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"servers": [s.to_dict() for s in self.servers], "warnings": list(self.warnings)}


class HostPool:
    """Model server clients with a number of worker slots each. `clients[i]` gets `slots[i]` workers (one int:
    all). One client with many slots keeps that many requests in flight against one URL (an engine such as vLLM
    or a router spreads them)."""

    def __init__(self, clients: Sequence[ModelServer], *, slots: int | Sequence[int] = 1):
        if not clients:
            raise InputError("a host pool needs at least one server")
        counts = [slots] * len(clients) if isinstance(slots, int) else list(slots)
        if len(counts) != len(clients) or any(isinstance(n, bool) or n < 1 for n in counts):
            raise InputError(f"give each of the {len(clients)} servers at least one worker slot, got {slots!r}")
        hosts = [c.host.rstrip("/") for c in clients]
        twice = sorted({h for h in hosts if hosts.count(h) > 1})
        if twice:
            raise InputError(f"--host {', '.join(twice)} is given more than once; give each server once and raise "
                             "--workers for more parallel requests to it")
        self.clients, self.slots = tuple(clients), tuple(counts)

    @classmethod
    def connect(cls, hosts: Sequence[str | None], *, settings: ClientSettings | None = None,
                slots: int | Sequence[int] = 1) -> HostPool:
        """One client per host (None: the backend's environment variable, then its default), all with the same
        backend, timeouts and retries as `settings` (its `host` is ignored)."""
        settings = settings or ClientSettings()
        addresses = [resolve_address(h, settings.backend) for h in hosts] or [resolve_address(None, settings.backend)]
        clients = [connect(replace(settings, host=a)) for a in addresses]
        return cls(clients, slots=slots)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(c.host for c in self.clients)

    @property
    def total_slots(self) -> int:
        return sum(self.slots)

    def preflight(self, *, chat_model: str | None, embed_model: str | None,
                  status: Callable[[str], None] | None = None) -> PoolInfo:
        """Preflight every server (it answers, has the models, each can do its job; `status` hears what a slow
        check waits for), then refuse when a model's digest differs between servers: different builds would make
        answers depend on which server was free."""
        servers = tuple(preflight(c, chat_model=chat_model, embed_model=embed_model, load=False, status=status)
                        for c in self.clients)
        problems = [problem for model in (embed_model, chat_model) if model is not None
                    if (problem := _digest_problem(model, servers))]
        if problems:  # before loading anything anywhere
            raise InputError("\n".join(problems))
        if chat_model is not None:
            servers = tuple(load_chat_model(c, s, chat_model) for c, s in zip(self.clients, servers))
        return PoolInfo(servers, _version_warnings(servers))

    def map(self, work: Callable[[ModelServer, T], R], items: Sequence[T]) -> list[Served[R]]:
        """`work(client, item)` for every item, spread over the servers' slots; results in input order."""
        return list(self.imap(work, items))

    def imap(self, work: Callable[[ModelServer, T], R], items: Sequence[T]) -> Iterator[Served[R]]:
        """Like `map`, yielding each result as soon as it and every earlier one are done (rows can be written
        as they finish). The first failure, in input order, is raised; no new item starts after a failure or
        after the caller stops iterating, and items already running are waited for, except after Ctrl-C: then
        they are abandoned (daemon threads, ended with the process) so that the process stops at once."""
        board = _Board(len(items))
        threads = [threading.Thread(target=_worker, args=(board, client, work, items), daemon=True,
                                    name=f"host-{i}-slot-{s}")
                   for i, client in enumerate(self.clients) for s in range(self.slots[i])]
        for thread in threads:
            thread.start()
        interrupted = False
        try:
            for index in range(len(items)):
                yield board.result(index)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            board.stop()
            if not interrupted:  # after Ctrl-C, calls in flight are abandoned: the process stops at once
                for thread in threads:
                    thread.join()


class _Board:
    """Hands out item indices in order and collects results (or the exception an item raised) by index."""

    def __init__(self, size: int):
        self.size, self.next, self.stopped = size, 0, False
        self.done: dict[int, Served | BaseException] = {}
        self.cond = threading.Condition()

    def take(self) -> int | None:
        with self.cond:
            if self.stopped or self.next >= self.size:
                return None
            self.next += 1
            return self.next - 1

    def put(self, index: int, outcome: Served | BaseException) -> None:
        with self.cond:
            self.done[index] = outcome
            if isinstance(outcome, BaseException):
                self.stopped = True  # later items would most likely fail the same way (server gone)
            self.cond.notify_all()

    def result(self, index: int) -> Served:
        with self.cond:
            while index not in self.done:
                if self.stopped and index >= self.next:  # never started: report the failure that stopped us
                    raise next(outcome for _, outcome in sorted(self.done.items(), key=lambda item: item[0])
                               if isinstance(outcome, BaseException))
                self.cond.wait()
            outcome = self.done.pop(index)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


def _worker(board: _Board, client: ModelServer, work: Callable, items: Sequence) -> None:
    while (index := board.take()) is not None:
        try:
            board.put(index, Served(work(client, items[index]), client.host))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which raises it
            board.put(index, exc)


def _digest_problem(model: str, servers: Sequence[ServerInfo]) -> str | None:
    digests = [(s.host, s.models[model].digest) for s in servers]
    first_host, first = digests[0]
    other = next(((h, d) for h, d in digests[1:] if d != first), None)
    if other is None:
        return None
    return (f"model '{model}' differs between servers: {first_host} has digest {first[:12]}, "
            f"{other[0]} has digest {other[1][:12]}; {_same_build(model, servers[0])}, or drop one --host")


def _same_build(model: str, server: ServerInfo) -> str:
    if server.backend == "ollama":
        return f"run `ollama pull {model}` on each server so all serve the same build"
    return "serve the same model (name, path and server version: its identity by name only) on each server"


def _version_warnings(servers: Sequence[ServerInfo]) -> tuple[str, ...]:
    versions = {s.host: s.version for s in servers}
    if len(set(versions.values())) <= 1:
        return ()
    listed = ", ".join(f"{h} {v}" for h, v in versions.items())
    warning = (f"the servers run different server versions ({listed}); the same model and seed can answer "
               "differently on each, so upgrade them to one version for reproducible runs")
    return (warning,)
