"""Drafting settings: one flat record, resolved as flag, then --config TOML file, then default."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from pdfrag.asking import ChatOptions
from pdfrag.chunking import ChunkSettings
from pdfrag.ollama_client import DEFAULT_CHAT_MODEL, DEFAULT_EMBED_MODEL

from ..errors import InputError
from ..inputs import check_values, read_toml
from ..settings import ServerSettings
from .verify import Limits

_LIMITS = Limits()
UNANSWERABLE_EVERY = 4  # by default one unanswerable draft per 4 answerable ones asked: 1 in 5 of all drafts
UNANSWERABLE_SHARE = "1 in 5"


@dataclass(frozen=True)
class DraftSettings(ServerSettings):
    """Everything that decides what `rag-eval draft` writes."""

    docs: str = "sample_docs"
    out: str = "drafts.jsonl"
    per_page: int = 3
    pages: tuple[str, ...] = ()
    max_pages: int | None = None
    unanswerable: int | None = None  # None: the default share, UNANSWERABLE_SHARE (see `unanswerable_for`)
    seed: int = 42
    min_page_words: int = 20
    min_quote_words: int = _LIMITS.min_quote_words
    max_fact_words: int = _LIMITS.max_fact_words
    top_k: int = 4  # a round trip that misses the top k is tagged `hard`
    parametric: bool = True
    abstain_below: float = 2.5  # the offline baseline's default threshold
    dedupe_cosine: float = 0.95
    chunk_size: int = ChunkSettings.size_chars
    chunk_overlap: int = ChunkSettings.overlap_chars
    chat_model: str = DEFAULT_CHAT_MODEL
    embed_model: str = DEFAULT_EMBED_MODEL
    workers: int = 1  # pages drafted at once, per server (several servers: pages are spread over them)
    num_ctx: int = 16384  # as the bundled chatbot answers (tests/systems/test_system_settings.py keeps them equal)
    num_predict: int | None = None  # None: decided from the server (pdfrag.asking.default_num_predict)
    temperature: float = 0.0
    think: str = "auto"
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        for name in ("per_page", "min_quote_words", "max_fact_words", "top_k", "num_ctx", "num_predict", "workers"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise InputError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if (self.unanswerable or 0) < 0 or self.min_page_words < 0:
            raise InputError("--unanswerable and --min-page-words cannot be negative")
        if self.think not in ("auto", "on", "off"):
            raise InputError(f"think must be auto, on or off, got {self.think!r}")
        if not 0 < self.dedupe_cosine <= 1:
            raise InputError(f"dedupe-cosine must be in (0, 1], got {self.dedupe_cosine}")
        self.client()  # its own checks (timeouts, backend names), before any work

    def to_dict(self) -> dict:
        return asdict(self) | {"pages": list(self.pages), "hosts": list(self.hosts)}

    def chunking(self) -> ChunkSettings:
        return ChunkSettings(self.chunk_size, self.chunk_overlap)

    def chat(self) -> ChatOptions:
        think = {"auto": None, "on": True, "off": False}[self.think]
        return ChatOptions(self.chat_model, self.seed, self.temperature, self.num_ctx, self.num_predict, think)

    def unanswerable_for(self, pages: int) -> int:
        """Unanswerable drafts to ask for over `pages` pages: `--unanswerable` when given, else one for every
        UNANSWERABLE_EVERY answerable drafts asked (pages x --per-page, rounded up), 1 in 5 of all drafts, so
        that a case set tests abstention from the first run."""
        if self.unanswerable is not None:
            return self.unanswerable
        return -(-pages * self.per_page // UNANSWERABLE_EVERY) if pages else 0

    def limits(self) -> Limits:
        return Limits(min_quote_words=self.min_quote_words, max_fact_words=self.max_fact_words)


FIELDS = {f.name: f for f in fields(DraftSettings)}
def resolve(flags: dict[str, Any], config_path: str | None = None) -> DraftSettings:
    """Flags that were given (not None) win over the config file, which wins over the defaults."""
    values = load_config(config_path) if config_path else {}
    values.update({k: v for k, v in flags.items() if v is not None and k in FIELDS})
    for name in ("pages", "hosts"):
        if name in values:
            values[name] = tuple(values[name])
    return DraftSettings(**values)


def load_config(path: str | Path) -> dict[str, Any]:
    """A TOML file of the same settings as the flags (dashes or underscores), e.g. `per-page = 2`."""
    return check_values(read_toml(path), Path(path), FIELDS, paths=("docs", "out"))
