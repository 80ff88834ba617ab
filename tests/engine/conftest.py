"""Fixtures of the engine tier (`python -m pytest -m engine`): a real llama-server and two small real models
(tests/engine/engine.py). The first run builds the server (~12 min on 2 cores); later runs take it from the cache.

The tier is skipped only when the engine cannot be had on this machine (no cmake, ninja or compiler; nothing can
be downloaded). With PDF_RAG_EVAL_ENGINE_REQUIRED=1 (set by .ci/run) that is a failure instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.engine.engine import Engine, EngineUnavailable, cache_dir, chat_settings, embed_settings, prepare
from tests.engine.servers import Server, ServerSettings

# Read at import, before tests/conftest.py's autouse fixture points HOME at each test's tmp_path.
CACHE = cache_dir()
REQUIRED = os.environ.get("PDF_RAG_EVAL_ENGINE_REQUIRED") == "1"
_PREPARED: list[Engine] = []  # for the terminal summary


@pytest.fixture(scope="session")
def engine(pytestconfig) -> Engine:
    """The server binary and both models, prepared (or found) in the engine cache. What is not cached is announced
    on the terminal as it starts, past pytest's capture: a fresh build is minutes of silence otherwise."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def status(line: str) -> None:
        with capture.global_and_fixture_disabled():
            print(f"\n{line}", file=sys.stderr, flush=True)

    try:
        prepared = prepare(CACHE, status=status)
    except EngineUnavailable as exc:
        reason = str(exc)
    else:
        _PREPARED.append(prepared)
        return prepared
    if REQUIRED:
        pytest.fail(f"the engine tier is required (PDF_RAG_EVAL_ENGINE_REQUIRED=1) but {reason}", pytrace=False)
    pytest.skip(f"no engine on this machine: {reason}")


@pytest.fixture(scope="session")
def engine_logs(tmp_path_factory) -> Path:
    """The servers' logs (their paths are in every start-up error)."""
    return tmp_path_factory.mktemp("engine-logs")


@pytest.fixture(scope="session")
def run_cache(tmp_path_factory) -> Path:
    """A cache folder (`--cache-dir`) the tier's runs share: the handbook's chunks are embedded once."""
    return tmp_path_factory.mktemp("engine-run-cache")


@pytest.fixture(scope="session")
def chat_server(engine, engine_logs) -> Iterator[Server]:
    """SmolLM2 as `smollm2` on 127.0.0.1: `-c 8192 -np 2 -t 1 --jinja` (two slots of 4,096 tokens)."""
    with Server(engine.server, chat_settings(engine), engine_logs) as server:
        yield server


@pytest.fixture(scope="session")
def embed_server(engine, engine_logs) -> Iterator[Server]:
    """Gemma 3 270M as `gemma-embed` on 127.0.0.1: mean-pooled embeddings, one slot of 2,048 tokens."""
    with Server(engine.server, embed_settings(engine), engine_logs) as server:
        yield server


@pytest.fixture
def start_server(engine, engine_logs) -> Iterator[Callable[[ServerSettings], Server]]:
    """start_server(chat_settings(engine, ctx=1024, slots=1)) -> a running Server, stopped after the test."""
    started: list[Server] = []

    def start(settings: ServerSettings) -> Server:
        server = Server(engine.server, settings, engine_logs)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


def pytest_terminal_summary(terminalreporter) -> None:
    for prepared in _PREPARED:
        terminalreporter.write_line(prepared.summary())
