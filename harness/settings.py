"""Run settings: one flat record, resolved in one place as flag, then --config TOML file, then default."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from chatbot.answer import AnswerSettings
from chatbot.chunking import ChunkSettings
from chatbot.errors import InputError
from chatbot.index import EmbedSettings
from chatbot.ollama_client import DEFAULT_CHAT_MODEL, DEFAULT_EMBED_MODEL, ClientSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_ANSWER, _CLIENT, _EMBED = AnswerSettings(), ClientSettings(), EmbedSettings()


@dataclass(frozen=True)
class RunSettings:
    """Everything that decides what a run measures. Written whole into the run's manifest."""

    docs: str = "sample_docs"
    cases: str = "sample_docs/cases.jsonl"
    out: str = "results"
    label: str | None = None
    k: tuple[int, ...] = (1, 2, 4)
    top_k: int = _ANSWER.top_k
    chunk_size: int = ChunkSettings.size_chars
    chunk_overlap: int = ChunkSettings.overlap_chars
    prompt: str | None = None
    chat_model: str = DEFAULT_CHAT_MODEL
    embed_model: str = DEFAULT_EMBED_MODEL
    doc_prefix: str | None = None
    query_prefix: str | None = None
    batch_size: int = _EMBED.batch_size
    host: str | None = None
    hosts: tuple[str, ...] = ()  # several servers (`--host` given more than once); empty: `host` alone
    timeout: float = _CLIENT.timeout_s
    retries: int = _CLIENT.retries
    backoff: float = _CLIENT.backoff_s
    num_ctx: int = _ANSWER.num_ctx
    num_predict: int = _ANSWER.num_predict
    seed: int = _ANSWER.seed
    temperature: float = _ANSWER.temperature
    think: str = "auto"
    min_quote_words: int = _ANSWER.min_quote_words
    max_reply_chars: int = _ANSWER.max_reply_chars
    retriever: str = _ANSWER.retriever
    cache_dir: str | None = None
    workers: int = 1  # per server
    answer_cache: bool = False  # reuse stored chat replies and question vectors (sweeps turn it on)
    repeat: int = 1
    system: str = "chatbot"  # chatbot, offline, an entry-point name, package.module:factory or http(s)://...
    abstain_below: float = 2.5  # offline baseline: BM25 score below which it abstains (see README)

    def __post_init__(self) -> None:
        for name in ("top_k", "workers", "repeat", "batch_size", "num_ctx", "num_predict", "min_quote_words"):
            if getattr(self, name) < 1:
                raise InputError(f"{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if not self.k or min(self.k) < 1:
            raise InputError(f"--k needs positive integers, got {list(self.k)}")
        if self.think not in ("auto", "on", "off"):
            raise InputError(f"think must be auto, on or off, got {self.think!r}")
        if max(self.k) > self.top_k:
            raise InputError(f"--k {max(self.k)} is larger than --top-k {self.top_k}: Hit@{max(self.k)} would only "
                             f"see {self.top_k} passages; raise --top-k or lower --k")
        if self.hosts and self.host is not None and self.host not in self.hosts:
            raise InputError(f"host {self.host!r} is not among hosts {list(self.hosts)}; give the servers as "
                             "hosts (or --host once per server) and drop host")
        self.client(), self.chunking(), self.answering(), self.embedding()  # their own checks, before any work

    def to_dict(self) -> dict:
        return asdict(self) | {"k": list(self.k), "hosts": list(self.hosts)}

    def servers(self) -> tuple[str | None, ...]:
        """The Ollama servers to use, in order: `hosts`, else the one `host` (None: $OLLAMA_HOST or default)."""
        return self.hosts or (self.host,)

    def chunking(self) -> ChunkSettings:
        return ChunkSettings(self.chunk_size, self.chunk_overlap)

    def embedding(self) -> EmbedSettings:
        return EmbedSettings(self.embed_model, self.doc_prefix, self.query_prefix, self.batch_size)

    def client(self) -> ClientSettings:
        return ClientSettings(host=self.servers()[0], timeout_s=self.timeout, retries=self.retries,
                              backoff_s=self.backoff)

    def answering(self) -> AnswerSettings:
        think = {"auto": None, "on": True, "off": False}[self.think]
        return AnswerSettings(top_k=self.top_k, chat_model=self.chat_model, prompt_path=self.prompt,
                              temperature=self.temperature, seed=self.seed, num_ctx=self.num_ctx,
                              num_predict=self.num_predict, think=think, min_quote_words=self.min_quote_words,
                              max_reply_chars=self.max_reply_chars, retriever=self.retriever)


FIELDS = {f.name: f for f in fields(RunSettings)}
_TYPE_NAMES = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string",
               "ints": "a list of integers", "strs": "a list of strings"}
_LISTS = ("k", "hosts")  # settings held as tuples


def _kind(name: str) -> str:
    """The TOML type a setting takes, from the dataclass annotation."""
    annotation = str(FIELDS[name].type)
    return next(k for k, marker in (("strs", "tuple[str"), ("ints", "tuple"), ("bool", "bool"), ("int", "int"),
                                    ("float", "float"), ("str", "str")) if marker in annotation)


def _has_type(name: str, value: Any) -> bool:
    kind = _kind(name)
    if kind == "strs":
        return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
    if kind == "ints":
        return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {"bool": bool, "str": str}[kind])


def resolve(flags: dict[str, Any], config_path: str | None = None, *, base: dict | None = None) -> RunSettings:
    """Flags that were given (not None) win over the config file, which wins over `base` (a resumed run's
    saved settings), which wins over the defaults."""
    values = {k: v for k, v in (base or {}).items() if k in FIELDS}
    if (base or {}).get("offline"):  # a run saved before --system existed
        values["system"] = "offline"
    values.update(load_config(config_path) if config_path else {})
    values.update({k: v for k, v in flags.items() if v is not None and k in FIELDS})
    if flags.get("offline"):  # --offline is an alias of --system offline
        values["system"] = "offline"
    for name in _LISTS:
        if name in values:
            values[name] = tuple(values[name])
    return RunSettings(**values)


def host_flags(given: list[str] | None) -> dict[str, Any]:
    """`--host` given n times as the flags `host` and `hosts` (None, None when not given), so that flags win over
    a config file's `host` or `hosts` whichever it sets."""
    if not given:
        return {"host": None, "hosts": None}
    return {"host": given[0], "hosts": tuple(given) if len(given) > 1 else ()}


def load_config(path: str | Path) -> dict[str, Any]:
    """A TOML file of the same settings as the flags (dashes or underscores), e.g. `chunk-size = 800`."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the config file ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from exc
    return check_config(data, path)


def check_config(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """Validate settings read from the TOML file `path` (every problem at once, each naming the file and key);
    return them by field name, with relative paths resolved against the file's folder."""
    values, problems = {}, []
    for key, value in data.items():
        name = key.replace("-", "_")
        if name == "offline" and isinstance(value, bool):  # `offline = true`: the alias of `system = "offline"`
            name, value = "system", "offline" if value else "chatbot"
        if name not in FIELDS:
            problems.append(f"{path}: unknown setting {key!r}; known: {', '.join(sorted(FIELDS))}")
            continue
        if name == "k" and isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not _has_type(name, value):
            problems.append(f"{path}: setting {key!r} must be {_TYPE_NAMES[_kind(name)]}, got {value!r}")
            continue
        values[name] = value
    if problems:
        raise InputError("\n".join(problems))
    base = path.parent
    for name in ("docs", "cases", "prompt", "out"):  # paths in a config file are relative to the file
        if isinstance(values.get(name), str) and not Path(values[name]).is_absolute():
            values[name] = str(base / values[name])
    return values
